//! The README is a landing page a newcomer reads in minutes (issue 49):
//! under 300 lines, every link in it and in docs/ leads somewhere, every
//! script and binary its commands name exists, and its Rust program is
//! `sim-tests/src/bin/readme-example.rs`, which runs.

use std::path::{Path, PathBuf};

use sim_tests::{bin_dir, dnrun, repo};

/// Every Markdown file of the README and docs/.
fn markdown_files() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md")];
    let mut dirs = vec![repo().join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("read {}: {e}", d.display())).flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The `(target)` of every `[text](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn the_readme_is_a_short_landing_page() {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("read README.md");
    let lines = text.lines().count();
    assert!(lines < 300, "README.md has {lines} lines: keep it under 300 and move details into docs/guide/");
}

#[test]
fn every_link_in_the_readme_and_docs_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read a Markdown file");
        for target in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').map_or((target.as_str(), None), |(p, a)| (p, Some(a)));
            let dest = if path.is_empty() { file.clone() } else { file.parent().unwrap_or(Path::new(".")).join(path) };
            if !dest.exists() {
                broken.push(format!("{}: {target} (no such file)", file.display()));
                continue;
            }
            if let (Some(a), Some("md")) = (anchor, dest.extension().and_then(|x| x.to_str())) {
                let dest_text = std::fs::read_to_string(&dest).unwrap_or_default();
                let found =
                    dest_text.lines().filter(|l| l.starts_with('#')).any(|l| slug(l.trim_start_matches('#')) == a);
                if !found {
                    broken.push(format!("{}: {target} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n  {}", broken.join("\n  "));
}

/// The binaries of the workspace: `src/bin/NAME.rs`, `src/bin/NAME/main.rs`
/// and `[[bin]] name = "NAME"`.
fn workspace_binaries() -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(repo()).expect("read the repository").flatten() {
        let bin = e.path().join("src/bin");
        if let Ok(rd) = std::fs::read_dir(&bin) {
            for b in rd.flatten() {
                let p = b.path();
                let name = if p.is_dir() { p.file_name() } else { p.file_stem() };
                out.extend(name.map(|n| n.to_string_lossy().into_owned()));
            }
        }
        if let Ok(toml) = std::fs::read_to_string(e.path().join("Cargo.toml")) {
            let mut in_bin = false;
            for l in toml.lines() {
                if l.starts_with('[') {
                    in_bin = l.trim() == "[[bin]]";
                } else if in_bin && l.trim_start().starts_with("name") {
                    out.extend(l.split('"').nth(1).map(str::to_string));
                }
            }
        }
    }
    out
}

#[test]
fn every_script_and_binary_a_command_names_exists() {
    let bins = workspace_binaries();
    assert!(bins.iter().any(|b| b == "dnrun"), "found no dnrun among {bins:?}");
    let mut missing = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read a Markdown file");
        let mut in_sh = false;
        for line in text.lines() {
            if line.starts_with("```") {
                in_sh = line.trim() == "```sh";
                continue;
            }
            if !in_sh {
                continue;
            }
            let command = line.split(" #").next().unwrap_or(line);
            for word in command.split_whitespace() {
                let word = word.trim_start_matches("./");
                if let Some(script) = word.strip_prefix("scripts/") {
                    let p = repo().join("scripts").join(script);
                    if !p.is_file() {
                        missing.push(format!("{}: scripts/{script}", file.display()));
                    }
                }
                for prefix in ["target/release/", "target/debug/"] {
                    if let Some(bin) = word.strip_prefix(prefix) {
                        if !bin.contains('/') && !bins.iter().any(|b| b == bin) {
                            missing.push(format!("{}: {word} (no such binary in the workspace)", file.display()));
                        }
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "commands name what does not exist:\n  {}", missing.join("\n  "));
}

#[test]
fn the_readme_rust_program_is_the_one_that_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("read README.md");
    let start = readme.find("```rust\n").expect("a Rust program in README.md") + "```rust\n".len();
    let code = &readme[start..start + readme[start..].find("```").expect("the end of the Rust block")];
    let file = std::fs::read_to_string(repo().join("sim-tests/src/bin/readme-example.rs")).expect("read the example");
    assert!(file.ends_with(code), "README.md's Rust program and sim-tests/src/bin/readme-example.rs differ");
    let out = dnrun(2, 2, &[], bin_dir().join("readme-example").to_str().unwrap(), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("got [1.0, 2.0, 3.0] from rank 0"), "{out:?}");
}
