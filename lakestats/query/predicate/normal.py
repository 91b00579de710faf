"""The normal form: one canonical SQL text per predicate (flattened, sorted and deduplicated
conjuncts and disjuncts, sorted distinct IN lists, ``BETWEEN`` as two comparisons,
canonical literals), so equivalent spellings share one key (answers, derived statistics)."""

from __future__ import annotations

from lakestats.query.predicate import tree as t


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def normalize(pred: t.Predicate) -> str:
    """Canonical SQL text of ``pred``: equivalent spellings give the same text."""
    pred = t.push_not(pred)
    if isinstance(pred, t.And | t.Or):
        glue = " AND " if isinstance(pred, t.And) else " OR "
        parts = set()
        for child in flatten(pred):
            text = normalize(child)
            between = isinstance(child, t.Between)
            as_or = isinstance(child, t.Or) or (between and child.negated)
            as_and = isinstance(child, t.And) or (between and not child.negated)
            if (as_or and isinstance(pred, t.And)) or (as_and and isinstance(pred, t.Or)):
                text = f"({text})"
            parts.add(text)
        return glue.join(sorted(parts))
    col = _quote(pred.column)
    if isinstance(pred, t.Compare):
        return f"{col} {pred.op} {pred.value.sql}"
    if isinstance(pred, t.Between):
        if pred.negated:
            return f"{col} < {pred.low.sql} OR {col} > {pred.high.sql}"
        return f"{col} <= {pred.high.sql} AND {col} >= {pred.low.sql}"
    if isinstance(pred, t.In):
        items = [v.sql for v in pred.values] + (["NULL"] if pred.has_null else [])
        return f"{col} {'NOT IN' if pred.negated else 'IN'} ({', '.join(items)})"
    if isinstance(pred, t.IsNull):
        return f"{col} IS {'NOT NULL' if pred.negated else 'NULL'}"
    if isinstance(pred, t.PrefixLike):
        escaped = pred.prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        text = "'" + (escaped + "%").replace("'", "''") + "'"
        tail = " ESCAPE '\\'" if escaped != pred.prefix else ""
        return f"{col} {'NOT LIKE' if pred.negated else 'LIKE'} {text}{tail}"
    if isinstance(pred, t.Like):
        text = "'" + pred.pattern.replace("'", "''") + "'"
        tail = f" ESCAPE '{pred.escape}'" if pred.escape else ""
        return f"{col} {'NOT LIKE' if pred.negated else 'LIKE'} {text}{tail}"
    raise TypeError(pred)


def flatten(pred: t.And | t.Or) -> list[t.Predicate]:
    out: list[t.Predicate] = []
    for child in pred.children:
        if type(child) is type(pred):
            out.extend(flatten(child))
        elif isinstance(child, t.Between) and child.negated == isinstance(pred, t.Or):
            c = child.column
            if child.negated:
                out.extend([t.Compare(c, "<", child.low), t.Compare(c, ">", child.high)])
            else:
                out.extend([t.Compare(c, ">=", child.low), t.Compare(c, "<=", child.high)])
        else:
            out.append(child)
    return out

