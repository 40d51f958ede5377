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

use super::balance::CpuIdleType;
use super::ids::CpuId;
use super::Scheduler;

/// `LOAD_AVG_PERIOD` ms: the blocked-load update period of idle CPUs.
const LOAD_AVG_PERIOD_MS: u64 = 32;
const NOHZ_BALANCE_KICK: u32 = 0x1;
const NOHZ_STATS_KICK: u32 = 0x2;

impl Scheduler {
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
        (0..self.nr_cpus())
            .filter(|&i| self.idle_cpu(i))
            .map(|i| self.rqs[i].next_balance)
            .min()
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
                let busy = (0..self.nr_cpus()).filter(|&i| !self.idle_cpu(i)).count();
                if busy > 1 {
                    flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                }
            }
        }
        if flags == 0 {
            return;
        }
        // kick_ilb(): the first idle CPU does the work (find_new_ilb()).
        if let Some(ilb) = (0..self.nr_cpus()).find(|&i| self.idle_cpu(i)) {
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
        for k in 1..=n {
            let c = (ilb + k) % n;
            if !self.idle_cpu(c) {
                continue;
            }
            if !self.idle_cpu(ilb) {
                // this CPU got work (need_resched): leave the rest.
                if flags & NOHZ_STATS_KICK != 0 {
                    has_blocked_load = true;
                }
                self.nohz_has_blocked |= has_blocked_load;
                return;
            }
            if flags & NOHZ_STATS_KICK != 0 {
                has_blocked_load |= self.update_nohz_stats(c);
            }
            if self.now >= self.rqs[c].next_balance && flags & NOHZ_BALANCE_KICK != 0 {
                self.sched_balance_domains(c, CpuIdleType::Idle);
            }
        }
        if flags & NOHZ_STATS_KICK != 0 {
            self.nohz_next_blocked =
                self.now + self.jiffies_to_ns(self.msecs_to_jiffies(LOAD_AVG_PERIOD_MS));
        }
        self.nohz_has_blocked |= has_blocked_load;
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
