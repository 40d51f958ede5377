//! Strong ids for the scheduler's objects. Each is an index into the
//! scheduler's arena of that kind; mixing them up is a type error.

use std::fmt;

macro_rules! id {
    ($(#[$m:meta])* $name:ident, $prefix:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id!(/// A host task (a thread: a vCPU, a worker, ...). Also its pid in reports.
    TaskId, "task");
id!(/// A host CPU.
    CpuId, "cpu");
id!(/// A task group (cgroup with the cpu controller).
    GroupId, "tg");
id!(/// A scheduling entity: a task's or a group's per-CPU one.
    SeId, "se");
id!(/// A CFS runqueue: one per (group, CPU).
    CfsRqId, "cfs_rq");
