//! A process's memory use as the kernel counts it, for tests that bound it.

/// Resident memory of a process, from `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Resident set size now (`VmRSS`), in bytes.
    pub resident: u64,
    /// The highest resident set size so far (`VmHWM`), in bytes.
    pub peak_resident: u64,
}

impl ProcessMemory {
    /// Reads the memory of process `pid`.
    pub fn of(pid: u32) -> Result<Self, String> {
        let path = format!("/proc/{pid}/status");
        let status =
            std::fs::read_to_string(&path).map_err(|err| format!("reading {path}: {err}"))?;
        let field = |name: &str| -> Result<u64, String> {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|value| value.trim().strip_suffix(" kB"))
                .and_then(|kib| kib.trim().parse::<u64>().ok())
                .map(|kib| kib * 1024)
                .ok_or_else(|| format!("{path} has no readable {name}"))
        };
        Ok(Self {
            resident: field("VmRSS")?,
            peak_resident: field("VmHWM")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_resident_set_and_a_peak_at_least_as_high() {
        let memory = ProcessMemory::of(std::process::id()).unwrap();
        assert!(memory.resident > 0);
        assert!(memory.peak_resident >= memory.resident);
    }
}
