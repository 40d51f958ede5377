//! A thread's `mmap_lock` acquisitions by call site (docs/workloads.md,
//! "profile.json", `mmap_lock`), from the tracepoints of
//! include/trace/events/mmap_lock.h (6.18: `mmap_lock_start_locking`,
//! `mmap_lock_acquire_returned`, `mmap_lock_released`, each with the mm and
//! whether it is for write). The call site is the syscall the thread is in,
//! or `fault` outside any (a user page fault that took mmap_lock: on 6.4+
//! one that fell back from the VMA's own lock). Hold: acquisition to
//! release by the same thread of the same mm and mode; a read acquisition
//! while the thread holds it for write is `mmap_write_downgrade()`, which
//! ends the write hold. Wait: start of locking to the acquisition.

use crate::hist::Dist;
use std::collections::BTreeMap;

/// Most locks a thread is seen starting or holding at once (one mm, read
/// and write, with room for a few others); beyond it events are dropped.
pub const MAX_OPEN: usize = 8;
/// Most call sites a thread keeps (syscall names are bounded by the
/// kernel's table; this bounds a malformed trace).
pub const MAX_SITES: usize = 64;

/// One call site and mode.
#[derive(Default, Clone, Debug)]
pub struct Site {
    pub acquisitions: u64,
    /// `success=false`: a killable or trylock attempt that failed.
    pub failed: u64,
    /// Write holds ended by `mmap_write_downgrade()`.
    pub downgrades: u64,
    pub hold: Dist,
    pub wait: Dist,
}

impl Site {
    pub fn merge(&mut self, o: &Site) {
        self.acquisitions += o.acquisitions;
        self.failed += o.failed;
        self.downgrades += o.downgrades;
        self.hold.merge(&o.hold);
        self.wait.merge(&o.wait);
    }
}

/// A lock being waited for or held: (mm, write, since, call site).
type Open = (String, bool, u64, String);

#[derive(Default, Debug)]
pub struct MmapLockAcc {
    starting: Vec<Open>,
    held: Vec<Open>,
    /// (call site, write) -> its figures.
    pub sites: BTreeMap<(String, bool), Site>,
}

impl MmapLockAcc {
    fn site(&mut self, site: &str, write: bool) -> Option<&mut Site> {
        let k = (site.to_string(), write);
        if !self.sites.contains_key(&k) && self.sites.len() >= MAX_SITES {
            return None;
        }
        Some(self.sites.entry(k).or_default())
    }

    fn take(v: &mut Vec<Open>, mm: &str, write: bool) -> Option<Open> {
        let i = v.iter().position(|o| o.0 == mm && o.1 == write)?;
        Some(v.swap_remove(i))
    }

    pub fn start(&mut self, mm: &str, write: bool, ts: u64, site: &str) {
        Self::take(&mut self.starting, mm, write);
        if self.starting.len() < MAX_OPEN {
            self.starting.push((mm.into(), write, ts, site.into()));
        }
    }

    pub fn acquired(&mut self, mm: &str, write: bool, success: bool, ts: u64, site: &str) {
        let started = Self::take(&mut self.starting, mm, write);
        if !success {
            if let Some(s) = self.site(site, write) {
                s.failed += 1;
            }
            return;
        }
        if !write {
            if let Some((_, _, since, wsite)) = Self::take(&mut self.held, mm, true) {
                if let Some(s) = self.site(&wsite, true) {
                    s.hold.add(ts.saturating_sub(since));
                    s.downgrades += 1;
                }
            }
        }
        if let Some(s) = self.site(site, write) {
            s.acquisitions += 1;
            if let Some((_, _, t0, _)) = started {
                s.wait.add(ts.saturating_sub(t0));
            }
        }
        Self::take(&mut self.held, mm, write);
        if self.held.len() < MAX_OPEN {
            self.held.push((mm.into(), write, ts, site.into()));
        }
    }

    pub fn released(&mut self, mm: &str, write: bool, ts: u64) {
        if let Some((_, _, since, site)) = Self::take(&mut self.held, mm, write) {
            if let Some(s) = self.site(&site, write) {
                s.hold.add(ts.saturating_sub(since));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_and_waits_go_to_the_call_site_and_a_downgrade_ends_the_write_hold() {
        let mut a = MmapLockAcc::default();
        // A fault: read, waited 100, held 2000.
        a.start("mm1", false, 1_000, "fault");
        a.acquired("mm1", false, true, 1_100, "fault");
        a.released("mm1", false, 3_100);
        // munmap: write held 500, downgraded, then read held 700.
        a.start("mm1", true, 10_000, "munmap");
        a.acquired("mm1", true, true, 10_000, "munmap");
        a.acquired("mm1", false, true, 10_500, "munmap");
        a.released("mm1", false, 11_200);
        // A failed killable write lock: no hold.
        a.start("mm1", true, 20_000, "mprotect");
        a.acquired("mm1", true, false, 20_050, "mprotect");
        a.released("mm1", true, 21_000);
        let f = &a.sites[&("fault".to_string(), false)];
        assert_eq!(
            (f.acquisitions, f.hold.sum(), f.wait.sum()),
            (1, 2_000, 100)
        );
        let w = &a.sites[&("munmap".to_string(), true)];
        assert_eq!((w.acquisitions, w.downgrades, w.hold.sum()), (1, 1, 500));
        let r = &a.sites[&("munmap".to_string(), false)];
        assert_eq!((r.acquisitions, r.hold.sum()), (1, 700));
        let m = &a.sites[&("mprotect".to_string(), true)];
        assert_eq!((m.acquisitions, m.failed, m.hold.count()), (0, 1, 0));
    }
}
