//! Link options of the `deputy` binary.

fn main() {
    // deputy re-executes itself for every command it runs (the per-command supervisor), so
    // the dynamic loader's work on it is paid per command. Packed relative relocations
    // (DT_RELR) shrink its ~38,000 relocation entries from 900 KB to 8 KB, and the loader
    // reads and applies them about a third faster. The binary stays position-independent.
    // GNU ld (2.38+) and lld know the option, and use it only when the C library supports
    // it (glibc 2.36+); older linkers ignore unknown `-z` keywords with a warning.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
