"""queries.PER_ROW names every row of every statement that binds one value per row."""

import re

from sqsqlite import defaults as D
from sqsqlite import queries as Q


def _statements():
    for name in dir(Q):
        value = getattr(Q, name)
        if isinstance(value, Q.Sql):
            yield name, value
        elif isinstance(value, tuple) and value and all(isinstance(v, Q.Sql) for v in value):
            yield from ((f"{name}[{n}]", v) for n, v in enumerate(value))


def test_per_row_has_a_name_for_every_row_of_every_statement():
    for name, sql in _statements():
        rows: dict[str, set[int]] = {}
        for column, i in re.findall(r":([a-z_]+?)_(\d+)\b", sql):
            rows.setdefault(column, set()).add(int(i))
        for column, indexes in rows.items():
            if column == "param" or not {0, 1} <= indexes:  # SQLAlchemy's own names; a run of rows starts at 0
                continue
            assert set(map(f"{column}_{{}}".format, indexes)) <= set(Q.PER_ROW[column]), (name, column, max(indexes))


def test_per_row_covers_a_batch_and_a_buffered_consumers_prefetch():
    assert len(Q.PER_ROW["id"]) == max(D.MAX_BATCH_ENTRIES, D.BUFFER_PREFETCH.high)
