//! Link options of the `deputy` binary.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(static_unwinder)");
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
    static_unwinder();
    println!("cargo:rerun-if-changed=build.rs");
}

/// Links the unwinder (which panics use) into the binary instead of loading `libgcc_s.so`
/// at every start: loading it, and its constructor asking the CPU for its features
/// (`cpuid`, which traps to the hypervisor in a VM), cost about 0.2 ms per process, paid by
/// every server start and every command's launcher. Rust's standard library asks for
/// `-lgcc_s` on glibc targets; a `libgcc_s.a` that is GCC's static unwinder (`libgcc_eh.a`,
/// which `gcc -static-libgcc` links) is found first, in a directory searched before the
/// system's. Without GCC's static unwinder nothing changes.
fn static_unwinder() {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let static_crt = env("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|feature| feature == "crt-static");
    if env("CARGO_CFG_TARGET_OS") != "linux" || env("CARGO_CFG_TARGET_ENV") != "gnu" || static_crt {
        return; // The standard library links its unwinder statically, or not from libgcc.
    }
    if env("TARGET") != env("HOST") {
        return; // The compiler asked below builds for this machine, not for the target.
    }
    // Before any early return: a compiler named later is asked again.
    println!("cargo:rerun-if-env-changed=CC");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let Ok(output) = std::process::Command::new(compiler)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let found = std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    // A compiler that does not have the file prints its bare name.
    if !found.is_absolute() || !found.is_file() {
        return;
    }
    let dir = std::path::Path::new(&env("OUT_DIR")).join("static-unwinder");
    if std::fs::create_dir_all(&dir).is_ok()
        && std::fs::copy(&found, dir.join("libgcc_s.a")).is_ok()
    {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-cfg=static_unwinder");
    }
}
