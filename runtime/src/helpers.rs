//! `extern "C"` helpers callable from JIT code (filled in by the JIT work).
