"""What a sandbox is: its data directory, the settings remembered there, and where each file lives.

A sandbox is identified by its data directory alone. `start` records the version, ports, heap,
disk access mode and SSTable format in sandbox.json, so every later verb needs only --data-dir.
"""

import dataclasses
import json
import os
import re
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.sandbox.versions import SSTABLE_FORMATS, series_of

DISK_ACCESS_MODES = ("auto", "mmap", "mmap_index_only", "standard")
DEFAULT_NATIVE_PORT = 9042
DEFAULT_JMX_PORT = 7199
DEFAULT_HEAP = "1G"
HOST = "127.0.0.1"


@dataclasses.dataclass
class Settings:
    version: str | None
    native_port: int = DEFAULT_NATIVE_PORT
    jmx_port: int = DEFAULT_JMX_PORT
    # Gossip's port. Two sandboxes side by side need different ones too; by default it follows
    # the JMX port (7199 -> 7000, 17199 -> 17000) so users only ever choose two ports.
    storage_port: int | None = None
    # None: the version's own default (auto -> mmap on 4.x, mmap_index_only on 5.0), which
    # cassandra.yaml then leaves unset, as a stock node does.
    disk_access_mode: str | None = None
    heap: str = DEFAULT_HEAP
    # None: the version's default (big). 'bti' (5.0) also needs storage_compatibility_mode NONE.
    sstable_format: str | None = None

    def __post_init__(self) -> None:
        if self.storage_port is None:
            self.storage_port = self.jmx_port - 199 if self.jmx_port > 1223 else self.jmx_port + 1
        if self.disk_access_mode is not None and self.disk_access_mode not in DISK_ACCESS_MODES:
            raise CasstraceError(f"unknown disk access mode {self.disk_access_mode!r}",
                                 f"use one of {', '.join(DISK_ACCESS_MODES)}")
        if self.version is not None and self.sstable_format is not None:
            formats = series_of(self.version).sstable_formats
            if self.sstable_format not in formats:
                raise CasstraceError(
                    f"Cassandra {self.version} cannot write {self.sstable_format!r} SSTables",
                    f"use --sstable-format {' or '.join(formats)}"
                    + ("" if self.sstable_format not in SSTABLE_FORMATS else ", or --version 5.0"))
        if not re.fullmatch(r"\d+[MmGg]", self.heap):
            raise CasstraceError(f"heap size {self.heap!r} is not like 512M or 1G",
                                 "pass --heap with a number and M or G")
        ports = {"native": self.native_port, "JMX": self.jmx_port, "storage": self.storage_port}
        for name, port in ports.items():
            if not 1 <= port <= 65535:
                raise CasstraceError(f"{name} port {port} is out of range", "use 1024-65535")
        if len(set(ports.values())) < len(ports):
            raise CasstraceError(f"the sandbox's ports must differ, got {ports}",
                                 "choose distinct --native-port and --jmx-port")


class Layout:
    """Every path of one sandbox; all of them under its data directory."""

    def __init__(self, data_dir: str | os.PathLike[str]):
        self.root = Path(data_dir).expanduser().absolute()
        self.settings = self.root / "sandbox.json"
        self.pid_file = self.root / "cassandra.pid"
        self.conf = self.root / "conf"
        self.yaml = self.conf / "cassandra.yaml"
        self.logback = self.conf / "logback.xml"
        self.tools_logback = self.conf / "logback-tools.xml"
        self.data = self.root / "data"
        self.commitlog = self.root / "commitlog"
        self.saved_caches = self.root / "saved_caches"
        self.hints = self.root / "hints"
        self.cdc_raw = self.root / "cdc_raw"
        self.logs = self.root / "logs"
        self.log = self.logs / "system.log"

    def load_settings(self) -> Settings | None:
        if not self.settings.exists():
            return None
        try:
            return Settings(**json.loads(self.settings.read_text()))
        except (ValueError, TypeError) as error:
            raise CasstraceError(f"{self.settings} is unreadable ({error})",
                                 f"delete {self.settings} and start the sandbox again") from None

    def save_settings(self, settings: Settings) -> None:
        partial = self.settings.with_suffix(".partial")
        partial.write_text(json.dumps(dataclasses.asdict(settings), indent=2) + "\n")
        partial.replace(self.settings)
