//! Files by job (issue 49, item 4): no Rust source file outside tests is
//! over 1,000 lines. A file that grows past it mixes jobs again; split it
//! into child modules named for what they hold.

use std::path::{Path, PathBuf};

use sim_tests::repo;

/// Most lines a source file may have.
const MOST_LINES: usize = 1000;

/// Every `.rs` file under `dir`, except test directories and build output.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if p.is_dir() {
            if !matches!(name.as_ref(), "target" | "tests" | "benches" | ".git") && !name.starts_with('.') {
                sources(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_outside_tests_is_over_1000_lines() {
    let root = repo();
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 100, "found only {} source files under {}", files.len(), root.display());
    let mut long: Vec<(usize, String)> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            let rel = f.strip_prefix(&root).unwrap_or(f).display().to_string();
            (lines > MOST_LINES).then_some((lines, rel))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "source files over {MOST_LINES} lines (split them by job): {long:?}");
}
