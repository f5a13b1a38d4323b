//! The exported register map: the committed spec page is current, the C
//! header compiles and agrees with the Rust layout, and the JSON parses.

use std::path::PathBuf;
use std::process::Command;

use fpga_regs::export::{c_header, json, markdown};
use fpga_regs::spec::spec;
use fpga_regs::ur;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn committed_spec_page_is_current() {
    let path = repo_root().join("docs/REGISTERS.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let fresh = markdown(&spec());
    assert!(
        committed == fresh,
        "docs/REGISTERS.md is stale; regenerate it with\n  cargo run -p hw-tools --bin dimmnet-regs -- --format md -o docs/REGISTERS.md"
    );
}

#[test]
fn c_header_compiles_and_matches_rust_offsets() {
    let dir = std::env::temp_dir().join(format!("dn-regs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let header = dir.join("dimmnet2_regs.h");
    std::fs::write(&header, c_header(&spec())).unwrap();
    let status = Command::new("gcc")
        .args(["-fsyntax-only", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg(&header)
        .status()
        .expect("gcc must be installed to check the C header");
    assert!(status.success(), "gcc -fsyntax-only rejected the generated header");

    // Compile and run a program that prints offsets computed by the C compiler.
    let prog = dir.join("offsets.c");
    std::fs::write(
        &prog,
        r#"#include <stdio.h>
#include "dimmnet2_regs.h"
int main(void) {
    printf("%zu %zu %zu %zu %u %u %llu\n",
        offsetof(struct dn_user_regs, doorbell), offsetof(struct dn_user_regs, last_error),
        offsetof(struct dn_user_regs, completion), offsetof(struct dn_user_regs, descriptor),
        DN_LLCM_OFFSET, DN_UR_EXPOSE(3), (unsigned long long)DN_ERR_NOT_EXPOSED);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("offsets");
    let status = Command::new("gcc")
        .args(["-std=c11", "-Werror", "-Wall", "-o"])
        .arg(&exe)
        .arg(&prog)
        .arg(format!("-I{}", dir.display()))
        .status()
        .unwrap();
    assert!(status.success());
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let expected = format!(
        "{} {} {} {} {} {} {}\n",
        ur::off::DOORBELL,
        ur::off::LAST_ERROR,
        ur::off::COMPLETIONS,
        ur::off::DESCRIPTORS,
        fpga_regs::layout::LLCM_OFFSET,
        ur::off::EXPOSE + 3 * ur::off::EXPOSE_STRIDE,
        fpga_regs::ErrorCode::NotExposed as u16
    );
    assert_eq!(text, expected);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_describes_the_map() {
    let v: serde_json::Value = serde_json::from_str(&json(&spec())).unwrap();
    assert_eq!(v["device"], "DIMMnet-2");
    let ur_regs = v["regions"].as_array().unwrap().iter().find(|r| r["name"] == "UR").unwrap();
    let doorbell = ur_regs["registers"].as_array().unwrap().iter().find(|r| r["name"] == "DOORBELL").unwrap();
    assert_eq!(doorbell["offset"], ur::off::DOORBELL as u64);
    let enums = v["enums"].as_array().unwrap();
    let cmd = enums.iter().find(|e| e["name"] == "CMD").unwrap();
    assert_eq!(cmd["values"].as_array().unwrap().len(), 8);
    assert!(cmd["values"].as_array().unwrap().iter().any(|v| v["name"] == "SCHED" && v["value"] == 7));
    assert!(cmd["values"].as_array().unwrap().iter().any(|v| v["name"] == "AMO" && v["value"] == 8));
    assert!(enums.iter().any(|e| e["name"] == "AMO_OP"));
    assert!(enums.iter().any(|e| e["name"] == "REDUCE_OP"));
}
