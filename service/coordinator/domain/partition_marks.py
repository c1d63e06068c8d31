"""Paimon's partition mark-done: which partitions a request names, checked against the table's schema.

A writer marks a partition done once it has written all of it (Paimon's `partition.mark-done-action`);
downstream jobs wait for that instead of a `_SUCCESS` file. A mark names whole partitions: every
partition key of the table, and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from coordinator.domain.table_schema import TableShape
from coordinator.errors import InvalidRequest
from paimon_format.values import from_json_value, to_json_value


def marked_partitions(
    shape: TableShape, specs: Sequence[Mapping[str, JsonValue]], *, field: str, as_text: bool
) -> list[dict[str, JsonValue]]:
    """The partitions of `specs`, each checked to name exactly the table's partition keys, in their
    order: typed values (the native API: JSON values of the columns' types, made canonical) or, with
    `as_text`, Paimon's REST catalog's partition spec strings, kept as they are.

    Raises:
        InvalidRequest: naming `field[i]` or `field[i].key`.
    """
    if not shape.partition_names:
        raise InvalidRequest("the table has no partition keys: there is no partition to mark", field=field)
    if not specs:
        raise InvalidRequest("name at least one partition", field=field)
    out: list[dict[str, JsonValue]] = []
    for i, spec in enumerate(specs):
        path = f"{field}[{i}]"
        unknown = sorted(set(spec) - set(shape.partition_names))
        if unknown:
            raise InvalidRequest(f"{unknown[0]!r} is not a partition key", field=f"{path}.{unknown[0]}")
        partition: dict[str, JsonValue] = {}
        for name, data_type in zip(shape.partition_names, shape.partition_types, strict=True):
            if name not in spec:
                raise InvalidRequest(f"a mark names whole partitions: {name!r} is missing", field=path)
            raw = spec[name]
            if isinstance(raw, str) and "\x00" in raw:
                raise InvalidRequest("a partition value holds no NUL", field=f"{path}.{name}")
            if as_text:
                if not isinstance(raw, str):
                    raise InvalidRequest("a partition value is a string", field=f"{path}.{name}")
                partition[name] = raw
                continue
            try:
                partition[name] = to_json_value(from_json_value(raw, data_type, field=name), data_type)  # type: ignore[assignment]
            except ValueError as error:
                raise InvalidRequest(str(error), field=f"{path}.{name}") from None
        out.append(partition)
    return out
