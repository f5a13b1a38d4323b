//! Generate bindings to the system's DPDK (pkg-config `libdpdk`) and
//! compile the fast-path shim. Without DPDK (or without the `dpdk`
//! feature) nothing is generated and the crate reports what is missing at
//! run time instead of failing the build.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(dpdk_found)");
    println!("cargo:rerun-if-changed=src/wrapper.h");
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=DN_NO_DPDK");
    if env::var_os("CARGO_FEATURE_DPDK").is_none() {
        println!("cargo:rustc-env=DN_DPDK_MISSING=built without the `dpdk` feature");
        return;
    }
    if dn_knobs::flag("DN_NO_DPDK").unwrap_or(true) {
        println!("cargo:rustc-env=DN_DPDK_MISSING=built with DN_NO_DPDK set");
        return;
    }
    // Probe again when a `.pc` file appears, changes or goes in one of
    // pkg-config's directories: installing libdpdk-dev after a first
    // build must not leave the backend off until some source changes.
    for dir in pkg_config_dirs() {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    let lib = match pkg_config::Config::new().atleast_version("21.11").probe("libdpdk") {
        Ok(lib) => lib,
        Err(e) => {
            let why = e.to_string().lines().next().unwrap_or("").to_string();
            println!(
                "cargo:warning=DPDK not found ({why}); the dpdk backend is off. Run scripts/setup.sh (libdpdk-dev)."
            );
            println!(
                "cargo:rustc-env=DN_DPDK_MISSING=pkg-config found no libdpdk >= 21.11 when this was built ({why}); install libdpdk-dev (scripts/setup.sh) and rebuild"
            );
            return;
        }
    };
    let mut clang_args: Vec<String> = lib.include_paths.iter().map(|p| format!("-I{}", p.display())).collect();
    // pkg-config's cflags also force-include rte_config.h and pick -march.
    clang_args.extend(["-include".into(), "rte_config.h".into(), "-march=corei7".into()]);
    let bindings = bindgen::Builder::default()
        .header("src/wrapper.h")
        .clang_args(&clang_args)
        .generate_comments(false)
        .layout_tests(false)
        .derive_default(true)
        .allowlist_function("rte_eal_(init|cleanup|process_type)")
        .allowlist_function("rte_strerror")
        .allowlist_function("rte_socket_id")
        .allowlist_function("rte_pktmbuf_pool_create(_by_ops)?")
        .allowlist_function("rte_mempool_free")
        .allowlist_function("rte_eth_(dev_configure|dev_start|dev_stop|dev_close|rx_queue_setup|tx_queue_setup|dev_get_port_by_name|macaddr_get|link_get_nowait|dev_info_get|dev_count_avail|promiscuous_enable|stats_get)")
        .allowlist_function("rte_get_tsc_hz")
        .allowlist_function("rte_vdev_init")
        .allowlist_type("rte_mbuf")
        .allowlist_type("rte_eth_conf")
        .allowlist_type("rte_eth_stats")
        .allowlist_var("RTE_MBUF_DEFAULT_BUF_SIZE|RTE_PKTMBUF_HEADROOM|RTE_ETHER_ADDR_LEN|RTE_ETH_LINK_UP|RTE_MAX_ETHPORTS")
        .opaque_type("rte_mempool")
        .generate()
        .unwrap_or_else(|e| panic!("bindgen failed on DPDK's headers ({e}); is libclang-dev installed? (scripts/setup.sh)"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings.write_to_file(out.join("bindings.rs")).expect("cannot write bindings.rs");
    let mut shim = cc::Build::new();
    shim.file("src/shim.c").flag("-include").flag("rte_config.h").flag("-march=corei7").warnings(true);
    for p in &lib.include_paths {
        shim.include(p);
    }
    shim.compile("dn_dpdk_shim");
    // rte_vdev_init lives in the vdev bus driver, which pkg-config's
    // --libs leaves to the plugin loader.
    println!("cargo:rustc-link-lib=dylib=rte_bus_vdev");
    println!("cargo:rustc-cfg=dpdk_found");
}

/// The directories pkg-config searches (`PKG_CONFIG_PATH` first, then its
/// built-in `pc_path`) that exist: cargo reruns this script when a file in
/// one of them changes. A directory that does not exist is left out (cargo
/// would rerun the script on every build for it).
fn pkg_config_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        env::var_os("PKG_CONFIG_PATH").map(|p| env::split_paths(&p).collect()).unwrap_or_default();
    let builtin = std::process::Command::new("pkg-config").args(["--variable", "pc_path", "pkg-config"]).output();
    if let Ok(out) = builtin {
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            dirs.extend(env::split_paths(text.trim()));
        }
    }
    dirs.retain(|d| d.is_dir());
    dirs.sort();
    dirs.dedup();
    dirs
}
