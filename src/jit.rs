//! jit (to be written).
