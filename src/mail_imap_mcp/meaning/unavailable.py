"""The one error of the meaning package, apart so that the model's loaders can raise it without
importing the module that picks among them."""


class MeaningUnavailable(Exception):
    """Search by meaning cannot run here: the ``meaning`` extra is not installed, or the model cannot be
    read. The message says why and what the user does."""


def fatal(error: BaseException) -> None:
    """Raise ``error`` again where it stops the process (an interrupt, an exit); anything else a model's
    reader raised, a panic of its Rust code among them (pyo3's ``PanicException``, a ``BaseException``),
    says only that this model cannot be read."""
    if isinstance(error, KeyboardInterrupt | SystemExit | GeneratorExit):
        raise error
