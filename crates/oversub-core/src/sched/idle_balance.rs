//! When the load balancer runs, after kernel/sched/fair.c (Linux 6.12.117):
//! the tick's `sched_balance_trigger()` (periodic balance through
//! `sched_balance_softirq()`/`sched_balance_domains()` and the nohz kick
//! `nohz_balancer_kick()`), the idle load balancer `_nohz_idle_balance()`,
//! and `sched_balance_newidle()` before a CPU goes idle.
//!
//! Simplifications (docs/model.md): the softirq and the ILB IPI run at once
//! (no latency); idle CPUs stop their tick at once (NOHZ_IDLE) and are in
//! `nohz.idle_cpus_mask` exactly while idle; `nohz.next_balance` is the
//! earliest `next_balance` of the idle CPUs (what NOHZ_NEXT_KICK keeps it
//! at); balancing costs no time, so `rq->avg_idle < max_newidle_lb_cost`
//! never skips a newidle balance and `nohz_newidle_balance()` is not
//! modelled.
//!
//! As in the kernel, the idle CPUs are a maintained mask (`nohz.idle_cpus_mask`
//! with its count `nohz.nr_cpus`, a [`CpuMask`](super::CpuMask)), updated where a CPU's
//! idleness changes (`nohz_balance_enter_idle()`/`nohz_balance_exit_idle()`),
//! so the tick's kick test does not scan every CPU.

use super::balance::CpuIdleType;
use super::ids::CpuId;
use super::Scheduler;

/// `LOAD_AVG_PERIOD` ms: the blocked-load update period of idle CPUs.
const LOAD_AVG_PERIOD_MS: u64 = 32;
const NOHZ_BALANCE_KICK: u32 = 0x1;
const NOHZ_STATS_KICK: u32 = 0x2;

impl Scheduler {
    /// The balancer's part of `add_nr_running()`, after `cpu`'s
    /// `nr_running` went up by one: the CPU is busy, and overloaded at two.
    #[inline]
    pub(crate) fn balance_add_nr_running(&mut self, cpu: CpuId) {
        self.nohz_track_busy(cpu);
        if self.rqs[cpu.idx()].nr_running == 2 {
            self.overloaded_cpus.set(cpu.idx(), true);
        }
    }

    /// The balancer's part of `sub_nr_running()`, after `cpu`'s
    /// `nr_running` went down by `count`.
    #[inline]
    pub(crate) fn balance_sub_nr_running(&mut self, cpu: CpuId, count: u32) {
        let nr = self.rqs[cpu.idx()].nr_running;
        if nr < 2 {
            if nr + count >= 2 {
                self.overloaded_cpus.set(cpu.idx(), false);
            }
            // Still running something: it was busy and stays busy.
            if nr == 0 {
                self.nohz_track_idle(cpu);
            }
        }
    }

    /// `nohz_balance_exit_idle()` as far as the idle mask goes: `cpu` has
    /// just got a runnable task, a current task or a pending wakeup.
    #[inline]
    pub(crate) fn nohz_track_busy(&mut self, cpu: CpuId) {
        self.nohz.set(cpu.idx(), false);
    }

    /// `nohz_balance_enter_idle()` as far as the idle mask goes: called
    /// after `cpu` lost a runnable task, its current task or a pending
    /// wakeup, which may have left it idle.
    #[inline]
    pub(crate) fn nohz_track_idle(&mut self, cpu: CpuId) {
        let idle = self.idle_cpu(cpu.idx());
        self.nohz.set(cpu.idx(), idle);
    }

    /// `msecs_to_jiffies()`.
    fn msecs_to_jiffies(&self, ms: u64) -> u64 {
        let hz = self.cfg.hz as u64;
        (ms * hz).div_ceil(1000)
    }

    /// `max_load_balance_interval`: HZ * nr_cpus / 10 jiffies.
    fn max_load_balance_interval(&self) -> u64 {
        (self.cfg.hz as u64 * self.nr_cpus() as u64 / 10).max(1)
    }

    /// `get_sd_balance_interval()` in jiffies.
    fn get_sd_balance_interval(&self, cpu: usize, cpu_busy: bool) -> u64 {
        let sd = &self.rqs[cpu].sd;
        let mut interval = sd.balance_interval;
        if cpu_busy {
            interval *= sd.busy_factor;
        }
        let mut j = self.msecs_to_jiffies(interval);
        if cpu_busy {
            j = j.saturating_sub(1);
        }
        j.clamp(1, self.max_load_balance_interval())
    }

    fn jiffies_to_ns(&self, j: u64) -> u64 {
        j * self.cfg.tick_nsec()
    }

    /// `sched_balance_domains()`: balance `cpu` if its interval has passed
    /// and set `rq->next_balance`.
    fn sched_balance_domains(&mut self, cpu: usize, mut idle: CpuIdleType) {
        let jiffies = self.jiffies();
        let mut busy = idle != CpuIdleType::Idle;
        let mut interval = self.get_sd_balance_interval(cpu, busy);
        if jiffies >= self.rqs[cpu].sd.last_balance + interval {
            if self.sched_balance_rq(cpu, idle) > 0 {
                idle = if self.idle_cpu(cpu) {
                    CpuIdleType::Idle
                } else {
                    CpuIdleType::NotIdle
                };
                busy = idle != CpuIdleType::Idle;
            }
            self.rqs[cpu].sd.last_balance = jiffies;
            interval = self.get_sd_balance_interval(cpu, busy);
        }
        let next = self.rqs[cpu].sd.last_balance + interval;
        self.rqs[cpu].next_balance = self.jiffies_to_ns(next);
    }

    /// `sched_balance_softirq()` (SCHED_SOFTIRQ) on a busy CPU: blocked
    /// averages, then the domain balance.
    fn sched_balance_softirq(&mut self, cpu: usize) {
        let idle = if self.idle_cpu(cpu) {
            CpuIdleType::Idle
        } else {
            CpuIdleType::NotIdle
        };
        self.sched_balance_update_blocked_averages(CpuId(cpu as u32));
        self.sched_balance_domains(cpu, idle);
    }

    /// `sched_balance_trigger()` from the tick of a running CPU.
    pub fn sched_balance_trigger(&mut self, cpu: CpuId) {
        let c = cpu.idx();
        if self.now >= self.rqs[c].next_balance {
            self.sched_balance_softirq(c);
        }
        self.nohz_balancer_kick(c);
    }

    /// `nohz.next_balance`: the earliest next balance of the idle CPUs.
    fn nohz_next_balance(&self) -> Option<u64> {
        if self.nohz.weight() == 0 {
            return None;
        }
        self.nohz.iter().map(|i| self.rqs[i].next_balance).min()
    }

    /// A CPU entering idle (`nohz_balance_enter_idle()`): it has blocked load
    /// to decay from now on.
    pub fn nohz_balance_enter_idle(&mut self, cpu: CpuId) {
        self.rqs[cpu.idx()].has_blocked_load = true;
        self.nohz_has_blocked = true;
    }

    /// `nohz_balancer_kick()`: a busy CPU asks an idle one to balance on
    /// behalf of all idle CPUs (NOHZ_BALANCE_KICK) and/or to update their
    /// blocked load (NOHZ_STATS_KICK, every LOAD_AVG_PERIOD ms).
    fn nohz_balancer_kick(&mut self, cpu: usize) {
        let Some(next_balance) = self.nohz_next_balance() else {
            return;
        };
        let now = self.now;
        let mut flags = 0;
        if self.nohz_has_blocked && now > self.nohz_next_blocked {
            flags = NOHZ_STATS_KICK;
        }
        if now >= next_balance {
            if self.rqs[cpu].nr_running >= 2 {
                flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
            } else {
                // sd_llc_shared->nr_busy_cpus > 1.
                let busy = self.nr_cpus() as u32 - self.nohz.weight();
                if busy > 1 {
                    flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                }
            }
        }
        if flags == 0 {
            return;
        }
        // kick_ilb(): the first idle CPU does the work (find_new_ilb()).
        if let Some(ilb) = self.nohz.next_in(0, self.nr_cpus()) {
            self.nohz_idle_balance(ilb, flags);
        }
    }

    /// `update_nohz_stats()`: decay an idle CPU's blocked load at most once
    /// per jiffy; returns whether it still has some.
    fn update_nohz_stats(&mut self, c: usize) -> bool {
        if !self.rqs[c].has_blocked_load {
            return false;
        }
        if self.jiffies() <= self.rqs[c].last_blocked_load_update_tick {
            return true;
        }
        self.sched_balance_update_blocked_averages(CpuId(c as u32));
        self.rqs[c].has_blocked_load
    }

    /// `_nohz_idle_balance()` run by the idle CPU `ilb` for every idle CPU,
    /// starting after itself and ending with itself.
    fn nohz_idle_balance(&mut self, ilb: usize, flags: u32) {
        let n = self.nr_cpus();
        let mut has_blocked_load = false;
        if flags & NOHZ_STATS_KICK != 0 {
            self.nohz_has_blocked = false;
        }
        // for_each_cpu_wrap(balance_cpu, nohz.idle_cpus_mask, this_cpu+1):
        // the mask is read as the walk goes (balancing may fill a CPU).
        for (from, to) in [(ilb + 1, n), (0, ilb + 1)] {
            let mut next = from;
            while let Some(c) = self.nohz.next_in(next, to) {
                next = c + 1;
                if !self.nohz_idle_balance_cpu(ilb, c, flags, &mut has_blocked_load) {
                    return;
                }
            }
        }
        if flags & NOHZ_STATS_KICK != 0 {
            self.nohz_next_blocked =
                self.now + self.jiffies_to_ns(self.msecs_to_jiffies(LOAD_AVG_PERIOD_MS));
        }
        self.nohz_has_blocked |= has_blocked_load;
    }

    /// One idle CPU `c` of `_nohz_idle_balance()`'s walk; false when the
    /// walk stops because `ilb` itself got work.
    fn nohz_idle_balance_cpu(
        &mut self,
        ilb: usize,
        c: usize,
        flags: u32,
        has_blocked_load: &mut bool,
    ) -> bool {
        if !self.idle_cpu(ilb) {
            // this CPU got work (need_resched): leave the rest.
            if flags & NOHZ_STATS_KICK != 0 {
                *has_blocked_load = true;
            }
            self.nohz_has_blocked |= *has_blocked_load;
            return false;
        }
        if flags & NOHZ_STATS_KICK != 0 {
            *has_blocked_load |= self.update_nohz_stats(c);
        }
        if self.now >= self.rqs[c].next_balance && flags & NOHZ_BALANCE_KICK != 0 {
            self.sched_balance_domains(c, CpuIdleType::Idle);
        }
        true
    }

    /// `sched_balance_newidle()`: a CPU about to go idle pulls work if some
    /// CPU is overloaded (`rd->overloaded`); returns the tasks pulled.
    pub fn sched_balance_newidle(&mut self, cpu: CpuId) -> u32 {
        let c = cpu.idx();
        let interval = self.get_sd_balance_interval(c, false);
        let next = self.jiffies_to_ns(self.rqs[c].sd.last_balance + interval);
        let mut pulled = 0;
        if self.rd_overloaded {
            self.sched_balance_update_blocked_averages(cpu);
            pulled = self.sched_balance_rq(c, CpuIdleType::NewlyIdle);
            if self.cfs_rqs[self.rqs[c].cfs.idx()].h_nr_queued > 0 && pulled == 0 {
                pulled = 1;
            }
        }
        // Move the next balance forward.
        if self.rqs[c].next_balance > next {
            self.rqs[c].next_balance = next;
        }
        if pulled == 0 {
            self.nohz_balance_enter_idle(cpu);
        }
        pulled
    }
}
