"""Table storage behind the FileIO protocol."""
