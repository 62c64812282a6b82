//! Test support: a scratch directory under the temp dir, unique to the test
//! process and name, removed on drop.

use std::path::PathBuf;

/// A scratch directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `cqlj-test-PID-NAME` in the temp dir, emptied first.
    pub fn new(name: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("cqlj-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }

    /// A file inside the directory.
    pub fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
