"""The one error of the meaning package, apart so that the model's loaders can raise it without
importing the module that picks among them."""


class MeaningUnavailable(Exception):
    """Search by meaning cannot run here: the ``meaning`` extra is not installed, or the model cannot be
    read. The message says why and what the user does."""
