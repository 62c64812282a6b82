//! The on-disk position store: format, writer and memory-mapped reader.
