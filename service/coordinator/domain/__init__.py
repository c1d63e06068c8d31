"""Pure commit rules over plain data: no I/O, no clock."""
