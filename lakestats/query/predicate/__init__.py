"""SQL predicates over a table's columns, one rule a module: the typed tree (``tree``),
reading SQL into it (``parse``, with ``plain``, ``text``, ``literal`` and ``keywords``), its
normal form (``normal``) and its single-column key sets (``sets``). The estimator
(``query.estimate``) and the row filter (``query.predicate_eval``) read the tree."""

from lakestats.query.predicate.normal import normalize
from lakestats.query.predicate.parse import parse
from lakestats.query.predicate.sets import ColumnSet, column_set, is_set, point_keys, terms
from lakestats.query.predicate.tree import (
    LEAVES,
    And,
    Between,
    Compare,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Predicate,
    PrefixLike,
    columns_of,
    like_regex,
    push_not,
)

__all__ = [
    "LEAVES", "And", "Between", "ColumnSet", "Compare", "In", "IsNull", "Like", "Literal",
    "Not", "Or", "Predicate", "PrefixLike", "column_set", "columns_of", "is_set",
    "like_regex", "normalize", "parse", "point_keys", "push_not", "terms",
]
