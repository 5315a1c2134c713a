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
    // The functions a start of `deputy mcp-server`, the launcher and a turn run, laid out
    // next to each other (`startup-order.txt`, made by `scripts/startup-order.sh`): they are
    // otherwise spread over the whole text, and a start faults in (and keeps resident) a
    // page or more around every one. Release builds with lld only (the default linker of
    // x86_64 Linux since Rust 1.90; GNU ld does not know the option), and without warnings
    // for the names a later build no longer has: a stale list only loses some of its effect.
    let lld_by_default = std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu")
        && !std::env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| flags.contains("link"));
    if std::env::var("PROFILE").as_deref() == Ok("release") && lld_by_default {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let order = std::path::Path::new(&dir).join("startup-order.txt");
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        println!("cargo:rerun-if-changed=startup-order.txt");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
