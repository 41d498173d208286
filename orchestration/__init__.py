"""The orchestration layer: what `run` (runner), `watch` (watcher) and the capture agents on other
hosts (agents) do, step by step, and the plans of variants every command's captures go through
(experiment): they drive the node (node/) and the probes (probes/), write the
trace (traces/), and hand it to the analyses. cli/ calls them; nothing below them calls back.

May import: node, probes, traces, and the top-level modules (errors, paths, phases, outputs,
redaction, interrupts)."""
