"""Errors raised at the project's boundaries (spec, CLI, importer, model parameters)."""


class TcpProfileError(Exception):
    """Base class: the CLI prints str(err) on one line and exits non-zero."""


class ValidationError(TcpProfileError, ValueError):
    """A value at a boundary is not allowed; names the field and what is allowed."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class IperfError(TcpProfileError):
    """iperf3 produced no usable result; the message is the failure reason stored with the run."""


class IperfDocumentError(IperfError, ValidationError):
    """An iperf3 -J document holds a value that is not part of a coherent iperf3 result; `field` is
    its JSON path (e.g. ``end.sum_received.bits_per_second``)."""


class EnvironmentNotReady(TcpProfileError):
    """A required tool, privilege or kernel facility is missing."""


def is_interrupt(err: BaseException) -> bool:
    """Whether err is a user's interrupt. DuckDB (2.0) catches a SIGINT that arrives while a query runs and
    raises RuntimeError('Query interrupted') instead of KeyboardInterrupt (its `interrupt()` raises
    InterruptException); both mean Ctrl-C, so the CLI exits 130 and the campaign resumes as after one."""
    return (isinstance(err, KeyboardInterrupt)
            or (type(err) is RuntimeError and str(err) == "Query interrupted")
            or type(err).__name__ == "InterruptException")
