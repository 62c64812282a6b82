//! transform (to be written).
