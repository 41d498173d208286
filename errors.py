"""The one error type a user sees: what went wrong and how to fix it, on one line."""


class CasstraceError(Exception):
    """A failure the user can act on. The CLI prints it as one line and exits non-zero."""

    exit_code = 2

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} (fix: {self.fix})" if self.fix else self.message


def not_utf8(error: UnicodeDecodeError) -> str:
    """Why a file the user gave is not text, as the middle of one line."""
    return f"not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start})"
