//! syntax (to be written).
