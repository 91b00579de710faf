"""One root exception, so callers catch ``LakestatsError`` and get a one-line message.

Every message says what was wrong and what to do about it; the CLI prints it as is
and exits non-zero, the HTTP layer maps it to a 4xx.
"""

from __future__ import annotations


class LakestatsError(Exception):
    """Root of every error lakestats raises on purpose."""

    exit_code = 2

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


class TableNotFoundError(LakestatsError):
    """The table identifier or path names nothing."""


class NotATableError(LakestatsError):
    """The path exists but holds no table of a known format."""


class UnsupportedFeatureError(LakestatsError):
    """The table uses a feature no reader here supports; we refuse rather than guess."""


class MissingExtraError(UnsupportedFeatureError):
    """A part of lakestats whose libraries this installation lacks (an extra not installed)."""


class ColumnNotFoundError(LakestatsError):
    """A requested column is not in the table."""


class PartitionNotFoundError(LakestatsError):
    """A requested partition has no statistics (or does not exist)."""


class SnapshotNotFoundError(LakestatsError):
    """A ``--snapshot`` (or ``--as-of``'s) that the table does not have (expired, never
    written)."""


class StatisticsNotFoundError(LakestatsError):
    """The table has not been analyzed (under that statistics root)."""


class InvalidArgumentError(LakestatsError):
    """An option has a value outside what it accepts."""


class StorageError(LakestatsError):
    """The statistics root cannot be read or written."""


class DataFileError(LakestatsError):
    """A data file of the table cannot be read (corrupt, truncated, missing)."""


class ConflictError(LakestatsError):
    """Another analyze published first; retry."""


class CorruptStatisticsError(StorageError):
    """A statistics file or version manifest exists but cannot be read (truncated, edited)."""


class InvalidPredicateError(InvalidArgumentError):
    """A predicate (``--where``) cannot be parsed, or a literal does not fit its column."""


class UnsupportedPredicateError(InvalidPredicateError):
    """A predicate uses syntax the estimator does not support (named in the message)."""


class PredicateTooLargeError(InvalidPredicateError):
    """A predicate over a documented limit (length, nesting, conditions, IN-list size:
    docs/limits.md); refused before the work it would cost is done."""


class AuthenticationError(LakestatsError):
    """A service request without a valid token, where the service asks for one (401)."""


class PermissionDeniedError(LakestatsError):
    """A valid token without a grant for what it asks (403)."""


class SensitiveColumnError(PermissionDeniedError):
    """A question about the values of a column the service withholds (403): its
    frequencies, histogram, or a predicate comparing it with a value."""


class InsecureBindError(InvalidArgumentError):
    """``serve`` refused to listen beyond this machine without any token configured."""


class ConfigurationError(LakestatsError):
    """The service's tables file asks for what a table cannot give (a sensitive column it
    does not have, or one whose values name its partitions)."""
