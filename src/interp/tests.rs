//! Unit tests of the interpreter on hand-built IR.
