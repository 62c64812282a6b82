//! import (to be written).
