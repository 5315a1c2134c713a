//! Link options of the `deputy` binary and of its launcher `deputy-sandbox-exec`.

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
    static_launcher();
    println!("cargo:rerun-if-changed=build.rs");
}

/// Whether this build links glibc dynamically, for the machine it runs on (the C compiler
/// asked below builds for it): only then do the two link tricks below apply. With
/// `crt-static` the standard library links its unwinder and the C library statically.
fn dynamic_glibc_for_this_machine() -> bool {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let static_crt = env("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|feature| feature == "crt-static");
    env("CARGO_CFG_TARGET_OS") == "linux"
        && env("CARGO_CFG_TARGET_ENV") == "gnu"
        && !static_crt
        && env("TARGET") == env("HOST")
}

/// Where the C compiler finds the file `name` (`libc.a`, `rcrt1.o`); `None` when it has none.
fn c_library(name: &str) -> Option<std::path::PathBuf> {
    // The answer is the compiler's: a compiler named later is asked again.
    println!("cargo:rerun-if-env-changed=CC");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let output = std::process::Command::new(compiler)
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let found = std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    // A compiler that does not have the file prints its bare name.
    (found.is_absolute() && found.is_file()).then_some(found)
}

/// A directory of `OUT_DIR` for library files that stand in for the system's.
fn out_dir(name: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(&std::env::var("OUT_DIR").ok()?).join(name);
    std::fs::create_dir_all(&dir).ok().map(|()| dir)
}

/// Links the unwinder (which panics use) into the binary instead of loading `libgcc_s.so`
/// at every start: loading it, and its constructor asking the CPU for its features
/// (`cpuid`, which traps to the hypervisor in a VM), cost about 0.2 ms per process, paid by
/// every server start and every command's launcher. Rust's standard library asks for
/// `-lgcc_s` on glibc targets; a `libgcc_s.a` that is GCC's static unwinder (`libgcc_eh.a`,
/// which `gcc -static-libgcc` links) is found first, in a directory searched before the
/// system's. Without GCC's static unwinder nothing changes.
fn static_unwinder() {
    if !dynamic_glibc_for_this_machine() {
        return;
    }
    let (Some(found), Some(dir)) = (c_library("libgcc_eh.a"), out_dir("static-unwinder")) else {
        return;
    };
    if std::fs::copy(&found, dir.join("libgcc_s.a")).is_ok() {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-cfg=static_unwinder");
    }
}

/// Links the launcher (`deputy-sandbox-exec`, started once per command) as a static-pie
/// binary, as `scripts/build-release.sh` does, when the static C library is installed
/// (Debian: `libc6-dev`): no dynamic loader then maps and relocates `libc.so` at every
/// command, 0.3 ms of CPU time of the 1.5 ms a launcher and `true` take here. `crt-static`
/// applies to a whole build, not to one binary, so the launcher alone gets it at link time:
/// `-static-pie`, and for each library the standard library names (`-lc`, `-lm`, …) a
/// linker script named like the shared library, in a directory searched before the
/// system's, that names the static archive instead. Without them nothing changes.
fn static_launcher() {
    if !dynamic_glibc_for_this_machine() {
        return;
    }
    let libraries: [(&str, &[&str]); 7] = [
        ("c", &["libc.a", "libgcc_eh.a", "libgcc.a"]),
        ("gcc_s", &["libgcc_eh.a"]),
        ("m", &["libm.a"]),
        ("dl", &["libdl.a"]),
        ("rt", &["librt.a"]),
        ("pthread", &["libpthread.a"]),
        ("util", &["libutil.a"]),
    ];
    // `-static-pie` starts the program with `rcrt1.o`, which glibc builds only when
    // configured for static-pie.
    if c_library("rcrt1.o").is_none() {
        return;
    }
    let mut scripts = Vec::new();
    for (library, archives) in libraries {
        let Some(paths) = archives
            .iter()
            .map(|a| c_library(a))
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        scripts.push((
            format!("lib{library}.so"),
            format!("GROUP ( {} )\n", paths.join(" ")),
        ));
    }
    let Some(dir) = out_dir("static-libc") else {
        return;
    };
    if scripts
        .iter()
        .any(|(name, text)| std::fs::write(dir.join(name), text).is_err())
    {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bin=deputy-sandbox-exec=-L{}",
        dir.display()
    );
    println!("cargo:rustc-link-arg-bin=deputy-sandbox-exec=-static-pie");
    // For the test that checks the launcher has no dynamic loader.
    println!("cargo:rustc-env=DEPUTY_STATIC_LAUNCHER=1");
}
