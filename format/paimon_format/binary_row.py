"""Paimon's serialized BinaryRow: 4-byte big-endian arity, null bits, 8-byte slots, variable part."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta, timezone
from decimal import Context, Decimal, Inexact, InvalidOperation
from functools import lru_cache

from paimon_format.types import DataType

__all__ = [
    "EMPTY_ROW",
    "RowCodec",
    "decimal_to_unscaled",
    "decode_row",
    "encode_row",
    "row_codec",
    "unscaled_to_decimal",
]

_HEADER_BITS = 8  # byte 0 of the null-bit area holds the RowKind
_MAX_INLINE = 7  # var-length values up to 7 bytes live inside the slot
_MAX_ROW_KIND = 3  # +I, -U, +U, -D
_BIG_DECIMAL_BYTES = 16  # Java reserves 16 bytes for a non-compact decimal
_EPOCH = datetime(1970, 1, 1)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MILLIS_PER_DAY = 86_400_000
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_ARITY = struct.Struct(">i")
# 100 digits is ample for DECIMAL(38, s); the default context (28 digits) would silently round.
_EXACT_CONTEXT = Context(prec=100, traps=[Inexact, InvalidOperation])
_SCALE_QUANTUM = tuple(Decimal(1).scaleb(-s) for s in range(39))
# Tail of an inline slot: zero padding up to byte 7, then the 0x80|len marker.
_INLINE_TAIL = tuple(bytes(_MAX_INLINE - n) + bytes((0x80 | n,)) for n in range(_MAX_INLINE + 1))
_WORD_PAD = tuple(bytes((8 - r) % 8) for r in range(8))

# (slot value, var-part bytes) produced for a value whose slot depends on where the var part starts.
_VarEncoder = Callable[[object, int], tuple[object, bytes]]
_FixedEncoder = Callable[[object], object]
_Decoder = Callable[[int, bytes], object]


class RowCodec:
    """Precomputed encoder/decoder for one list of field types (build it once, reuse per row)."""

    __slots__ = (
        "_decoders",
        "_fields",
        "_header_words",
        "_pack",
        "_prefix",
        "_unpack",
        "arity",
        "fixed_size",
        "types",
    )

    def __init__(self, types: Sequence[DataType]) -> None:
        self.types: tuple[DataType, ...] = tuple(types)
        for t in self.types:
            if not isinstance(t, DataType):
                raise ValueError(f"expected DataType, got {type(t).__name__}")
        arity = len(self.types)
        self.arity = arity
        self._header_words = (arity + 63 + _HEADER_BITS) // 64
        self.fixed_size = self._header_words * 8 + arity * 8
        self._prefix = _ARITY.pack(arity)
        pack_codes: list[str] = []
        unpack_codes: list[str] = []
        fields: list[tuple[int, _FixedEncoder | None, _VarEncoder | None, object]] = []
        decoders: list[_Decoder | None] = []
        for i, t in enumerate(self.types):
            spec = _spec_for(t)
            pack_codes.append(spec.pack_code)
            unpack_codes.append(spec.unpack_code)
            fields.append((self._header_words + i, spec.fixed, spec.var, spec.null_slot))
            decoders.append(spec.decode)
        header = "Q" * self._header_words
        self._pack = struct.Struct("<" + header + "".join(pack_codes)).pack
        self._unpack = struct.Struct("<" + header + "".join(unpack_codes)).unpack_from
        self._fields = tuple(fields)
        self._decoders = tuple(decoders)

    def __reduce__(self) -> tuple[type[RowCodec], tuple[tuple[DataType, ...]]]:
        # Struct methods do not pickle; rebuild from the types (e.g. when shipped to Spark executors).
        return (RowCodec, (self.types,))

    def encode(self, values: Sequence[object]) -> bytes:
        """Serialize one row of Python values (None = null) to canonical BinaryRow bytes."""
        if len(values) != self.arity:
            raise ValueError(f"row has {len(values)} values but {self.arity} types")
        header_words = self._header_words
        args: list[object] = [0] * header_words
        args.extend(values)
        nulls = 0
        var_parts: list[bytes] = []
        cursor = self.fixed_size
        try:
            for slot, fixed, var, null_slot in self._fields:
                value = args[slot]
                if value is None:
                    nulls |= 1 << (slot - header_words)
                    args[slot] = null_slot
                elif fixed is not None:
                    args[slot] = fixed(value)
                elif var is not None:
                    args[slot], payload = var(value, cursor)
                    if payload:
                        var_parts.append(payload)
                        cursor += len(payload)
            if header_words == 1:
                args[0] = nulls << _HEADER_BITS
            else:
                bits = nulls << _HEADER_BITS
                for w in range(header_words):
                    args[w] = (bits >> (64 * w)) & 0xFFFF_FFFF_FFFF_FFFF
            fixed_part = self._pack(*args)
        except (ValueError, TypeError, OverflowError, AttributeError, struct.error) as exc:
            raise self._explain(values, exc) from None
        return self._prefix + fixed_part + b"".join(var_parts)

    def _explain(self, values: Sequence[object], exc: Exception) -> ValueError:
        # Slow path, only after a failure: find the offending field so the message can name it.
        for i, (t, value) in enumerate(zip(self.types, values, strict=True)):
            if value is None:
                continue
            spec = _spec_for(t)
            try:
                if spec.fixed is not None:
                    slot = spec.fixed(value)
                elif spec.var is not None:
                    slot = spec.var(value, self.fixed_size)[0]
                else:
                    slot = value
                struct.pack("<" + spec.pack_code, slot)
            except (ValueError, TypeError, OverflowError, AttributeError, struct.error) as field_exc:
                return ValueError(f"field {i} ({t}): cannot encode {value!r}: {field_exc}")
        return ValueError(f"cannot encode row: {exc}")

    def decode(self, data: bytes) -> list[object]:
        """Parse canonical BinaryRow bytes back into Python values (None = null)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValueError(f"BinaryRow must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) >= 4:
            (arity,) = _ARITY.unpack_from(data)
            if arity != self.arity:
                raise ValueError(f"BinaryRow arity {arity} does not match {self.arity} types")
        if len(data) < 4 + self.fixed_size:
            raise ValueError(f"BinaryRow too short: {len(data)} bytes, need at least {4 + self.fixed_size}")
        if data[4] > _MAX_ROW_KIND:
            raise ValueError(f"BinaryRow has invalid row kind byte {data[4]}")
        if len(data) % 8 != 4:
            raise ValueError(f"BinaryRow body length {len(data) - 4} is not a multiple of 8")
        slots = self._unpack(data, 4)
        header_words = self._header_words
        nulls = 0
        for w in range(header_words):
            nulls |= slots[w] << (64 * w)
        nulls >>= _HEADER_BITS
        out: list[object] = []
        try:
            for i, decoder in enumerate(self._decoders):
                if (nulls >> i) & 1:
                    out.append(None)
                elif decoder is None:
                    out.append(slots[header_words + i])
                else:
                    out.append(decoder(slots[header_words + i], data))
        except (ValueError, OverflowError, struct.error) as exc:
            bad = len(out)
            raise ValueError(f"malformed BinaryRow field {bad} ({self.types[bad]}): {exc}") from None
        return out


class _Spec:
    """How one type maps to a slot: struct codes, an encoder, a decoder and the null slot value."""

    __slots__ = ("decode", "fixed", "null_slot", "pack_code", "unpack_code", "var")

    def __init__(
        self,
        pack_code: str,
        *,
        unpack_code: str | None = None,
        fixed: _FixedEncoder | None = None,
        var: _VarEncoder | None = None,
        decode: _Decoder | None = None,
        null_slot: object = 0,
    ) -> None:
        self.pack_code = pack_code
        self.unpack_code = unpack_code or pack_code
        self.fixed = fixed
        self.var = var
        self.decode = decode
        self.null_slot = null_slot


@lru_cache(maxsize=256)
def _spec_for(t: DataType) -> _Spec:
    root = t.root
    if root == "BOOLEAN":
        return _Spec("?7x", fixed=_enc_bool, null_slot=False)
    if root == "TINYINT":
        return _Spec("b7x")
    if root == "SMALLINT":
        return _Spec("h6x")
    if root == "INT":
        return _Spec("i4x")
    if root == "BIGINT":
        return _Spec("q")
    if root == "FLOAT":
        return _Spec("f4x", fixed=_enc_float, null_slot=0.0)
    if root == "DOUBLE":
        return _Spec("d", fixed=_enc_float, null_slot=0.0)
    if root == "DATE":
        return _Spec("i4x", fixed=_enc_date, decode=_dec_date)
    if root == "TIME":
        return _Spec("i4x", fixed=_enc_time, decode=_dec_time)
    if t.is_string:
        return _Spec("8s", unpack_code="Q", var=_enc_string, decode=_dec_string, null_slot=b"")
    if t.is_binary:
        return _Spec("8s", unpack_code="Q", var=_enc_binary, decode=_dec_binary, null_slot=b"")
    if t.is_decimal:
        return _decimal_spec(t.decimal_precision, t.decimal_scale)
    if t.is_timestamp:
        return _timestamp_spec(t.is_compact_timestamp, t.root == "TIMESTAMP_LTZ")
    raise ValueError(f"unsupported type for BinaryRow: {t}")


def _enc_bool(value: object) -> object:
    if not isinstance(value, bool):
        raise TypeError(f"expected bool, got {type(value).__name__}")
    return value


def _enc_float(value: object) -> object:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"expected float, got {type(value).__name__}")
    return value


def _enc_date(value: object) -> int:
    if not isinstance(value, date) or isinstance(value, datetime):
        raise TypeError(f"expected datetime.date, got {type(value).__name__}")
    return value.toordinal() - _EPOCH_ORDINAL


def _dec_date(slot: int, data: bytes) -> date:
    return date.fromordinal(_EPOCH_ORDINAL + slot)


def _enc_time(value: object) -> int:
    if not isinstance(value, time):
        raise TypeError(f"expected datetime.time, got {type(value).__name__}")
    # Paimon's TIME is int millis of day; sub-millisecond digits are dropped, as Java and pypaimon do.
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def _dec_time(slot: int, data: bytes) -> time:
    millis = slot
    if not 0 <= millis < _MILLIS_PER_DAY:
        raise ValueError(f"TIME millis {millis} out of range")
    seconds, ms = divmod(millis, 1000)
    return time(seconds // 3600, seconds // 60 % 60, seconds % 60, ms * 1000)


def _var_slot(payload: bytes, cursor: int) -> tuple[object, bytes]:
    n = len(payload)
    if n <= _MAX_INLINE:
        return payload + _INLINE_TAIL[n], b""
    return _U64.pack((cursor << 32) | n), payload + _WORD_PAD[n & 7]


def _enc_string(value: object, cursor: int) -> tuple[object, bytes]:
    if not isinstance(value, str):
        raise TypeError(f"expected str, got {type(value).__name__}")
    return _var_slot(value.encode("utf-8"), cursor)


def _enc_binary(value: object, cursor: int) -> tuple[object, bytes]:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return _var_slot(bytes(value), cursor)


def _var_bytes(slot: int, data: bytes) -> bytes:
    if slot >> 63:
        n = (slot >> 56) & 0x7F
        if n > _MAX_INLINE:
            raise ValueError(f"inline length {n} > {_MAX_INLINE}")
        return _U64.pack(slot)[:n]
    offset = slot >> 32
    n = slot & 0xFFFF_FFFF
    return _var_region(data, offset, n)


def _var_region(data: bytes, offset: int, n: int) -> bytes:
    start = 4 + offset
    if offset < 8 or start + n > len(data):
        raise ValueError(f"variable-part reference (offset {offset}, length {n}) outside the row")
    return data[start : start + n]


def _dec_string(slot: int, data: bytes) -> str:
    return _var_bytes(slot, data).decode("utf-8")


def _dec_binary(slot: int, data: bytes) -> bytes:
    return _var_bytes(slot, data)


def decimal_to_unscaled(value: object, precision: int, scale: int) -> int:
    """Unscaled integer of a Decimal/int at `scale`; ValueError if it needs rounding or overflows."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        raise TypeError(f"expected decimal.Decimal, got {type(value).__name__}")
    unscaled: int
    if isinstance(value, int):
        unscaled = value * 10**scale
    else:
        if not value.is_finite():
            raise ValueError(f"decimal {value} is not finite")
        # Bound the magnitude first so neither quantize nor int() can be made to work on huge numbers.
        if not value.is_zero() and value.adjusted() >= precision - scale:
            raise ValueError(f"decimal {value} does not fit DECIMAL({precision}, {scale})")
        try:
            # Exact quantize: Inexact is trapped, so any non-zero digit beyond `scale` is an error.
            quantized = value.quantize(_SCALE_QUANTUM[scale], context=_EXACT_CONTEXT)
            unscaled = int(quantized.scaleb(scale, _EXACT_CONTEXT))
        except Inexact:
            raise ValueError(f"decimal {value} has more than {scale} fractional digits") from None
        except InvalidOperation:
            raise ValueError(f"decimal {value} cannot be represented at scale {scale}") from None
    if not -(10**precision) < unscaled < 10**precision:
        raise ValueError(f"decimal {value} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """Decimal with exactly `scale` fractional digits for an unscaled integer."""
    return Decimal(unscaled).scaleb(-scale, _EXACT_CONTEXT)


def _checked_decimal(unscaled: int, precision: int, scale: int) -> Decimal:
    if not -(10**precision) < unscaled < 10**precision:
        raise ValueError(f"unscaled value {unscaled} does not fit DECIMAL({precision}, {scale})")
    return unscaled_to_decimal(unscaled, scale)


def _decimal_spec(precision: int, scale: int) -> _Spec:
    if precision <= 18:

        def enc_compact(value: object) -> int:
            return decimal_to_unscaled(value, precision, scale)

        def dec_compact(slot: int, data: bytes) -> Decimal:
            return _checked_decimal(slot, precision, scale)

        return _Spec("q", fixed=enc_compact, decode=dec_compact)

    def enc_big(value: object, cursor: int) -> tuple[object, bytes]:
        unscaled = decimal_to_unscaled(value, precision, scale)
        # pypaimon sizes the two's complement as (bit_length + 8) // 8 bytes (one byte for 0); we match
        # it exactly. Java's BigInteger.toByteArray is one byte shorter when unscaled == -2**(8k-1).
        n = (unscaled.bit_length() + 8) // 8 if unscaled else 1
        raw = unscaled.to_bytes(n, "big", signed=True)
        return (cursor << 32) | n, raw + bytes(_BIG_DECIMAL_BYTES - n)

    def dec_big(slot: int, data: bytes) -> Decimal:
        offset, n = slot >> 32, slot & 0xFFFF_FFFF
        if not 1 <= n <= _BIG_DECIMAL_BYTES:
            raise ValueError(f"decimal byte length {n} not in 1..{_BIG_DECIMAL_BYTES}")
        raw = _var_region(data, offset, n)
        return _checked_decimal(int.from_bytes(raw, "big", signed=True), precision, scale)

    return _Spec("Q", var=enc_big, decode=dec_big)


def _to_naive_utc(value: object, ltz: bool) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"expected datetime.datetime, got {type(value).__name__}")
    if value.tzinfo is not None:
        if not ltz:
            raise ValueError("TIMESTAMP values must be naive datetimes")
        # TIMESTAMP_LTZ stores an instant; an aware value is normalised to the UTC wall clock.
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def _millis_and_micros(value: datetime) -> tuple[int, int]:
    delta = value - _EPOCH  # timedelta keeps 0 <= seconds < 86400 and 0 <= microseconds < 10**6
    millis = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    return millis, delta.microseconds % 1000


def _from_millis(millis: int, nano_of_milli: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=millis, microseconds=nano_of_milli // 1000)


def _timestamp_spec(compact: bool, ltz: bool) -> _Spec:
    if compact:

        def enc_compact(value: object) -> int:
            return _millis_and_micros(_to_naive_utc(value, ltz))[0]

        def dec_compact(slot: int, data: bytes) -> datetime:
            return _from_millis(slot, 0)

        return _Spec("q", fixed=enc_compact, decode=dec_compact)

    def enc_big(value: object, cursor: int) -> tuple[object, bytes]:
        millis, micros = _millis_and_micros(_to_naive_utc(value, ltz))
        return (cursor << 32) | (micros * 1000), _I64.pack(millis)

    def dec_big(slot: int, data: bytes) -> datetime:
        nano_of_milli = slot & 0xFFFF_FFFF
        if nano_of_milli >= 1_000_000:
            raise ValueError(f"nano-of-millisecond {nano_of_milli} out of range")
        (millis,) = _I64.unpack(_var_region(data, slot >> 32, 8))
        return _from_millis(millis, nano_of_milli)

    return _Spec("Q", var=enc_big, decode=dec_big)


@lru_cache(maxsize=1024)
def _codec_for(types: tuple[DataType, ...]) -> RowCodec:
    return RowCodec(types)


def row_codec(types: Sequence[DataType]) -> RowCodec:
    """Return the (cached) codec for a list of field types."""
    return _codec_for(tuple(types))


def encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Serialize values as Paimon BinaryRow bytes, identical to pypaimon's GenericRowSerializer."""
    return _codec_for(tuple(types)).encode(values)


def decode_row(data: bytes, types: Sequence[DataType]) -> list[object]:
    """Inverse of encode_row; ValueError on malformed bytes or an arity mismatch."""
    return _codec_for(tuple(types)).decode(data)


EMPTY_ROW: bytes = encode_row((), ())
