//! `dnrun` hosts the ranks of a simulated job as contexts of its own
//! process (`src/contexts`): the functions it answers for them
//! (`src/bin/dnrun/interpose.rs`) and the table its ranks look up
//! (`simlink::contexts::HOST_SYMBOL`) must be in its dynamic symbol table,
//! where the dynamic loader finds them before libc's.

fn main() {
    for sym in [
        "exit",
        "_exit",
        "_Exit",
        "__cxa_atexit",
        "write",
        "writev",
        "setenv",
        "unsetenv",
        "putenv",
        "clearenv",
        "dn_contexts_host_v1",
    ] {
        println!("cargo:rustc-link-arg-bin=dnrun=-Wl,--export-dynamic-symbol={sym}");
    }
}
