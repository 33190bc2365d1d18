//! The process's own figures at scrape time, read from `/proc/self` (Linux;
//! elsewhere they read as absent): resident memory, CPU time, threads, open
//! file descriptors and how many of them are sockets. With the runtime's
//! live task count they show whether a load left anything behind
//! (`thinkwire loadtest` compares them before and after).

use std::path::Path;

/// One reading; `None` where the platform does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessStats {
    /// Resident set size, bytes.
    pub resident_bytes: Option<u64>,
    /// User + system CPU time, seconds.
    pub cpu_seconds: Option<f64>,
    /// OS threads.
    pub threads: Option<u64>,
    /// Open file descriptors.
    pub open_fds: Option<u64>,
    /// Open file descriptors that are sockets (listener included).
    pub open_sockets: Option<u64>,
    /// Tokio tasks alive in the runtime that serves the scrape.
    pub tokio_tasks: Option<u64>,
}

/// Page size and clock tick as Linux fixes them for `/proc` on the
/// platforms thinkwire runs on (x86-64, aarch64 with 4 KiB pages); read
/// without `libc`, since the crate forbids `unsafe`.
const PAGE_BYTES: u64 = 4096;
const USER_HZ: f64 = 100.0;

impl ProcessStats {
    /// Reads the figures now.
    pub fn read() -> Self {
        let proc = Path::new("/proc/self");
        let resident_bytes = std::fs::read_to_string(proc.join("statm"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|pages| pages * PAGE_BYTES);
        let cpu_seconds = std::fs::read_to_string(proc.join("stat"))
            .ok()
            .and_then(|s| cpu_ticks(&s))
            .map(|ticks| ticks as f64 / USER_HZ);
        let threads = std::fs::read_to_string(proc.join("status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Threads:"))
                    .and_then(|v| v.trim().parse().ok())
            });
        let (open_fds, open_sockets) = match std::fs::read_dir(proc.join("fd")) {
            Ok(entries) => {
                let (mut fds, mut sockets) = (0u64, 0u64);
                for entry in entries.flatten() {
                    fds += 1;
                    if std::fs::read_link(entry.path())
                        .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
                    {
                        sockets += 1;
                    }
                }
                // The directory handle being read is one of them.
                (Some(fds.saturating_sub(1)), Some(sockets))
            }
            Err(_) => (None, None),
        };
        let tokio_tasks = tokio::runtime::Handle::try_current()
            .ok()
            .map(|h| h.metrics().num_alive_tasks() as u64);
        Self {
            resident_bytes,
            cpu_seconds,
            threads,
            open_fds,
            open_sockets,
            tokio_tasks,
        }
    }
}

/// `utime + stime` from `/proc/self/stat`; the command name (field 2) may
/// hold spaces and parentheses, so fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    // After `)`: state is field 3; utime and stime are fields 14 and 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        let stat = "42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(cpu_ticks(stat), Some(300));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn reads_this_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stats = ProcessStats::read();
        assert!(stats.resident_bytes.unwrap() > 1 << 20);
        assert!(stats.threads.unwrap() >= 1);
        assert!(stats.open_sockets.unwrap() >= 1);
        assert!(stats.open_fds.unwrap() >= stats.open_sockets.unwrap());
        drop(listener);
    }
}
