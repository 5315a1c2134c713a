//! The server starts its commands' supervisors through one zygote (the launcher started
//! once, a child of deputy, forking a supervisor per command): each test reads the process
//! tree from the command itself (`/proc/$PPID/stat`: the command's parent is its supervisor,
//! whose parent is the zygote) and kills the zygote to see that deputy carries on without it.
//! At exit, deputy ends the zygote and waits for it, so what its commands cost is counted.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "common/outside.rs"]
mod outside;
#[macro_use]
#[path = "common/sandbox_cli.rs"]
mod sandbox_cli;
#[path = "common/sandbox_server.rs"]
mod sandbox_server;

use std::time::{Duration, Instant};

use sandbox_server::{Server, exit_code, shell_command};
use serde_json::json;

/// Prints the supervisor's parent, that process's parent, and its name.
const TREE: &str = "zygote=$(cut -d' ' -f4 /proc/$PPID/stat); \
                    echo $zygote $(cut -d' ' -f4 /proc/$zygote/stat) $(cat /proc/$zygote/comm)";

/// `(zygote, its parent)` as a command printed them with [`TREE`] (the name checked).
fn tree(told: &str) -> (u32, u32) {
    let line = told
        .lines()
        .find(|line| line.split(' ').count() == 3 && line.ends_with("deputy-sandbox"))
        .unwrap_or_else(|| panic!("no process tree in {told}"));
    let mut parts = line.split(' ');
    let mut pid = || parts.next().unwrap().parse::<u32>().unwrap();
    (pid(), pid())
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for every purpose here; /proc/PID/stat's third field says.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.split(' ').nth(2) != Some("Z"))
}

#[test]
fn every_command_s_supervisor_comes_from_one_zygote_that_is_deputy_s_child() {
    let server = Server::start(json!({}));
    let server_pid = server.client.pid();
    let told = server.run(
        "danger-full-access",
        "never",
        &[shell_command("one", TREE), shell_command("two", TREE)],
    );
    let (first, second) = (tree(&told[0]), tree(&told[1]));
    assert_eq!(first.0, second.0, "two zygotes: {told:?}");
    assert_ne!(
        first.0, server_pid,
        "the supervisor is deputy's own child: {told:?}"
    );
    assert_eq!(
        first.1, server_pid,
        "the zygote is not deputy's child: {told:?}"
    );
}

#[test]
fn a_killed_zygote_ends_its_commands_and_deputy_starts_the_next_ones_itself() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let server_pid = server.client.pid();
    let marker = sandbox_cli::unique_marker("zygote");
    // The command notes the tree, starts a sleeper, then kills the zygote: the supervisor
    // dies with it (its parent-death signal) and takes the command's tree along, the
    // output with it.
    let tree_file = server.ws.join("tree.txt");
    let killer = format!(
        "({TREE}) > {tree}; zygote=$(cut -d' ' -f1 {tree}); \
         bash -c 'sleep 1000; :' {marker} & sleep 0.2; kill -9 $zygote; wait",
        tree = tree_file.display()
    );
    let before = Instant::now();
    let told = server.run(
        "danger-full-access",
        "never",
        &[
            shell_command("killer", &killer),
            shell_command("after", "cut -d' ' -f4 /proc/$PPID/stat"),
        ],
    );
    let (zygote, parent) = tree(&std::fs::read_to_string(&tree_file).unwrap());
    assert_eq!(parent, server_pid);
    assert!(
        told[0].contains("the process that started the command exited"),
        "{told:?}"
    );
    assert!(
        before.elapsed() < Duration::from_secs(60),
        "the killed command was not ended promptly"
    );
    assert!(!alive(zygote), "the zygote {zygote} still runs");
    let survivors = sandbox_cli::survivors_after(&marker, Duration::from_secs(10));
    sandbox_cli::kill_all_with(&marker);
    assert!(survivors.is_empty(), "{survivors:?} outlived the zygote");
    // The next command ran, its supervisor started by deputy itself.
    assert_eq!(exit_code(&told[1]), 0, "{told:?}");
    assert!(
        told[1]
            .lines()
            .any(|line| line.trim() == server_pid.to_string()),
        "the next command's supervisor is not deputy's child: {told:?}"
    );
    // The killer's supervisor, orphaned with the zygote, came to deputy and was waited for.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !zombies_of(server_pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let zombies = zombies_of(server_pid);
    assert!(zombies.is_empty(), "deputy leaves zombies: {zombies:?}");
}

/// The children of `parent` that have ended and not been waited for.
fn zombies_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // `pid (comm) state ppid …`: the name may hold spaces, its last `)` ends it.
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let after = stat.rsplit_once(')').map_or("", |(_, after)| after);
            let mut fields = after.split_whitespace();
            fields.next() == Some("Z") && fields.next() == Some(parent.to_string().as_str())
        })
        .collect()
}

#[test]
fn what_its_commands_cost_counts_in_deputy_s_cpu_time_once_it_exits() {
    let server = Server::start(json!({}));
    // Spins until this shell has used a second of CPU time of its own (/proc's utime, in
    // clock ticks of 1/100 s).
    let burn = "ticks=0; while [ $ticks -lt 100 ]; do for i in {1..2000}; do :; done; \
                ticks=$(cut -d' ' -f14 /proc/$$/stat); done; echo burnt $ticks";
    let told = server.run(
        "danger-full-access",
        "never",
        &[shell_command("burn", burn)],
    );
    assert_eq!(exit_code(&told[0]), 0, "{told:?}");
    assert!(told[0].contains("burnt "), "{told:?}");
    server.client.close_stdin();
    let cpu = server
        .client
        .wait_exit_with_cpu(Duration::from_secs(60))
        .expect("deputy did not exit after its stdin closed");
    // The command's second came through its supervisor and the zygote, each waited for.
    assert!(
        cpu >= Duration::from_secs(1),
        "deputy and what it waited for used {cpu:?}: the command's CPU time was lost"
    );
}
