//! The dependency direction of ARCHITECTURE.md, checked on the source:
//! no module refers to a stage after it, and interp and jit never refer to
//! each other.

use std::path::Path;

/// Every `.rs` file under `dir` with its text.
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("readable source dir") {
            let p = entry.expect("dir entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&p).expect("readable source");
                out.push((p.display().to_string(), text));
            }
        }
    }
    out
}

/// The module (first path component below `src/`) a file belongs to.
fn module_files(module: &str) -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir = src.join(module);
    let mut files = if dir.is_dir() {
        sources(&dir)
    } else {
        Vec::new()
    };
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        let text = std::fs::read_to_string(&file).expect("readable source");
        files.push((file.display().to_string(), text));
    }
    assert!(!files.is_empty(), "module {module} not found");
    files
}

#[test]
fn architecture_stages_point_one_way() {
    // (module, modules it must not name)
    let rules: [(&str, &[&str]); 9] = [
        (
            "ir",
            &[
                "syntax",
                "transform",
                "interp",
                "jit",
                "query",
                "scan",
                "import",
                "printer",
            ],
        ),
        (
            "syntax",
            &[
                "transform",
                "interp",
                "jit",
                "query",
                "scan",
                "import",
                "printer",
            ],
        ),
        (
            "transform",
            &["interp", "jit", "query", "scan", "import", "printer"],
        ),
        // Query preparation stands beside the engines: it uses only the
        // stages below them.
        ("query", &["interp", "jit", "scan", "import", "printer"]),
        ("interp", &["jit", "query", "scan", "import", "printer"]),
        ("jit", &["interp", "query", "scan", "import", "printer"]),
        (
            "import",
            &[
                "syntax",
                "transform",
                "interp",
                "jit",
                "query",
                "scan",
                "printer",
            ],
        ),
        // The searcher knows neither how a query is prepared nor how its
        // games are written.
        ("scan", &["query", "printer"]),
        // The printer writes the scan's matches; it reads a game's text by
        // the importer's rules (`import::cql_lines`, `import::parse_game`).
        (
            "printer",
            &["syntax", "transform", "interp", "jit", "query"],
        ),
    ];
    let mut violations = Vec::new();
    for (module, forbidden) in rules {
        for (path, text) in module_files(module) {
            for f in forbidden {
                for pat in [
                    format!("crate::{f}::"),
                    format!("crate::{f};"),
                    format!("crate::{{{f}"),
                ] {
                    if text.contains(&pat) {
                        violations.push(format!("{path} refers to {f}"));
                    }
                }
            }
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn architecture_runtime_depends_on_nothing_in_cqlj() {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    for (path, text) in sources(&runtime) {
        assert!(!text.contains("cqlj::"), "{path} refers to the cqlj crate");
    }
}

#[test]
fn architecture_column_offsets_only_in_layout() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (path, text) in sources(&src) {
        assert!(
            !text.contains("offset_of!"),
            "{path} computes a layout offset"
        );
    }
}
