//! An anonymous pipe between host tasks, after fs/pipe.c (Linux 6.12.117;
//! the 6.18 change to `pipe_read()`'s writer wakeup is the switch
//! PIPE_WAKE_WRITER_ON_FREE): a ring of `max_usage` page buffers, writes
//! of one message each (at most a page) merged into the last page while it
//! has room, reads of one message each, a blocked reader woken by the write
//! into an empty pipe and blocked writers queued as exclusive waiters on
//! `wr_wait`, woken one at a time.
//!
//! Not modelled: `pipe->mutex` (never contended for long here: it is held
//! for a copy, and tasks run to the end of a step), watch queues, packet
//! mode, `O_NONBLOCK`, writes larger than a page, several readers of one
//! pipe (`wake_next_reader`), signals.

use super::Wake;
use crate::sched::TaskId;
use std::collections::VecDeque;

/// `PAGE_SIZE` on x86-64: the size of one pipe buffer.
pub const PAGE_SIZE: u32 = 4096;

/// `PIPE_DEF_BUFFERS`: the slots of a new pipe.
pub const PIPE_DEF_BUFFERS: u32 = 16;

/// The tasks one pipe operation wakes, in the kernel's order.
pub type PipeWake = Wake;

/// What a `pipe_write()` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// The message is in the pipe; wake these tasks (WF_SYNC).
    Done(PipeWake),
    /// The pipe is full: the writer is queued on `wr_wait` and sleeps.
    Wait,
}

/// One pipe (`struct pipe_inode_info`).
#[derive(Clone, Debug)]
pub struct Pipe {
    /// `pipe->max_usage`: page buffers the ring may hold.
    max_usage: u32,
    /// Messages one page buffer takes: a write is merged into the last
    /// buffer while `offset + len + size <= PAGE_SIZE`.
    per_page: u32,
    /// Messages left in each occupied slot, tail first
    /// (`pipe->bufs[tail..head]`); a slot is released when its last message
    /// is read.
    bufs: VecDeque<u32>,
    /// Messages written into the head slot (its `offset + len` over the
    /// message size): whether the next write can merge.
    head_written: u32,
    /// Messages in the pipe.
    len: u32,
    /// The reader blocked on the empty pipe (`rd_wait`).
    reader_waiting: Option<TaskId>,
    /// `wr_wait`: writers blocked on the full pipe, exclusive waiters in
    /// queue order (`prepare_to_wait_event()` adds them at the tail).
    wr_wait: VecDeque<TaskId>,
}

impl Pipe {
    /// A pipe of `max_usage` page buffers carrying messages of `msg_size`
    /// bytes (1 ..= PAGE_SIZE; the caller validates).
    pub fn new(max_usage: u32, msg_size: u32) -> Pipe {
        Pipe {
            max_usage: max_usage.max(1),
            per_page: PAGE_SIZE / msg_size.clamp(1, PAGE_SIZE),
            bufs: VecDeque::new(),
            head_written: 0,
            len: 0,
            reader_waiting: None,
            wr_wait: VecDeque::new(),
        }
    }

    /// Messages in the pipe.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// `pipe_empty()`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Occupied slots (`head - tail`).
    pub fn slots(&self) -> u32 {
        self.bufs.len() as u32
    }

    /// Writers queued on `wr_wait`.
    pub fn writers_waiting(&self) -> usize {
        self.wr_wait.len()
    }

    /// `pipe_full()`: every slot is occupied.
    fn pipe_full(&self) -> bool {
        self.slots() >= self.max_usage
    }

    /// A new buffer at the head with this one message (the loop of
    /// `pipe_write()` after `pipe_full()` said no).
    fn push_new_buf(&mut self) {
        self.bufs.push_back(1);
        self.head_written = 1;
        self.len += 1;
    }

    /// `pipe_write()` (Linux 6.12.117; unchanged in 6.18) of one message by
    /// `me`. `waited`: `me` is coming back from the
    /// `wait_event_interruptible_exclusive(pipe->wr_wait, pipe_writable())`
    /// of an earlier call, which re-checks the condition and queues it again
    /// at the tail if the pipe is still full; once writable it takes a new
    /// slot (no merge after a wait) and wakes the next writer unless the
    /// pipe is full again (`wake_next_writer`). Otherwise the message is
    /// merged into the last page when the pipe was not empty and the page
    /// has room, else put in a new slot, else the writer waits. A reader is
    /// woken only when the pipe was empty (`was_empty`).
    pub fn pipe_write(&mut self, me: TaskId, waited: bool) -> Write {
        let was_empty;
        let mut wake_next_writer = false;
        if waited {
            if self.pipe_full() {
                self.wr_wait.push_back(me);
                return Write::Wait;
            }
            was_empty = self.is_empty();
            wake_next_writer = true;
            self.push_new_buf();
        } else {
            was_empty = self.is_empty();
            if !was_empty && self.head_written < self.per_page {
                *self
                    .bufs
                    .back_mut()
                    .expect("a non-empty pipe has a head buffer") += 1;
                self.head_written += 1;
                self.len += 1;
            } else if !self.pipe_full() {
                self.push_new_buf();
            } else {
                // A full pipe is not empty: no reader to wake before sleeping.
                self.wr_wait.push_back(me);
                return Write::Wait;
            }
        }
        if self.pipe_full() {
            wake_next_writer = false;
        }
        let mut wake = PipeWake::new();
        if was_empty {
            wake.extend(self.reader_waiting.take());
        }
        if wake_next_writer {
            wake.extend(self.wr_wait.pop_front());
        }
        Write::Done(wake)
    }

    /// `pipe_read()` of one message by the pipe's reader `me`: None after
    /// registering `me` as the reader blocked on the empty pipe, else the
    /// writer to wake (one, `wr_wait`'s waiters being exclusive). Which reads
    /// wake a writer is the version switch `wake_on_free`
    /// (PIPE_WAKE_WRITER_ON_FREE): off, Linux 6.1 and 6.12.117, every read
    /// that began on a full pipe (`was_full`), whether or not it released
    /// a slot; on, 6.18 ("pipe_read: don't wake up the writer if the pipe is
    /// still full", Oleg Nesterov, 2025), only a read that released a slot
    /// of a full pipe (`wake_writer |= pipe_full()` before
    /// `pipe_update_tail()`).
    pub fn pipe_read(&mut self, me: TaskId, wake_on_free: bool) -> Option<PipeWake> {
        if self.is_empty() {
            self.reader_waiting = Some(me);
            return None;
        }
        let was_full = self.pipe_full();
        let tail = self
            .bufs
            .front_mut()
            .expect("a non-empty pipe has a tail buffer");
        *tail -= 1;
        self.len -= 1;
        let freed = *tail == 0;
        if freed {
            self.bufs.pop_front();
        }
        let wake_writer = if wake_on_free {
            was_full && freed
        } else {
            was_full
        };
        let mut wake = PipeWake::new();
        if wake_writer {
            wake.extend(self.wr_wait.pop_front());
        }
        Some(wake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: TaskId = TaskId(0);

    fn w(i: u32) -> TaskId {
        TaskId(i)
    }

    /// 100-byte writes share pages (40 to a page) and a full 16-slot pipe
    /// still takes writes while its last page has room.
    #[test]
    fn writes_merge_into_pages_and_fill_slots() {
        let mut p = Pipe::new(PIPE_DEF_BUFFERS, 100);
        for _ in 0..16 * 40 {
            assert!(matches!(p.pipe_write(w(1), false), Write::Done(_)));
        }
        assert_eq!((p.len(), p.slots()), (640, 16));
        assert_eq!(p.pipe_write(w(1), false), Write::Wait);
        assert_eq!(p.writers_waiting(), 1);
    }

    /// The write into an empty pipe wakes its blocked reader; later writes
    /// wake nobody.
    #[test]
    fn only_the_write_into_an_empty_pipe_wakes_the_reader() {
        let mut p = Pipe::new(PIPE_DEF_BUFFERS, 100);
        assert_eq!(p.pipe_read(R, false), None);
        assert_eq!(
            p.pipe_write(w(1), false),
            Write::Done(PipeWake::from_slice(&[R]))
        );
        assert_eq!(p.pipe_write(w(2), false), Write::Done(PipeWake::new()));
    }

    /// Fills a one-slot pipe of 4 messages to a page and queues writers
    /// 1..=n on it.
    fn full_with_waiters(n: u32) -> Pipe {
        let mut p = Pipe::new(1, 1024);
        for _ in 0..4 {
            assert!(matches!(p.pipe_write(w(9), false), Write::Done(_)));
        }
        for i in 1..=n {
            assert_eq!(p.pipe_write(w(i), false), Write::Wait);
        }
        p
    }

    /// 6.12: every read of a full pipe wakes one writer (exclusive), even
    /// when it frees no slot; the woken writer finds no room and queues
    /// again at the tail.
    #[test]
    fn v6_12_read_of_a_full_pipe_wakes_one_writer() {
        let mut p = full_with_waiters(3);
        assert_eq!(p.pipe_read(R, false), Some(PipeWake::from_slice(&[w(1)])));
        assert_eq!(p.writers_waiting(), 2);
        assert_eq!(p.pipe_write(w(1), true), Write::Wait);
        assert_eq!(p.pipe_read(R, false), Some(PipeWake::from_slice(&[w(2)])));
    }

    /// 6.18: only the read that releases the full pipe's slot wakes a
    /// writer; that writer takes a new slot and, the pipe being full again,
    /// wakes no other.
    #[test]
    fn v6_18_only_a_read_that_frees_a_slot_wakes_a_writer() {
        let mut p = full_with_waiters(3);
        for _ in 0..3 {
            assert_eq!(p.pipe_read(R, true), Some(PipeWake::new()));
        }
        assert_eq!(p.pipe_read(R, true), Some(PipeWake::from_slice(&[w(1)])));
        assert_eq!(p.pipe_write(w(1), true), Write::Done(PipeWake::new()));
        assert_eq!((p.len(), p.slots(), p.writers_waiting()), (1, 1, 2));
    }

    /// A writer back from its wait takes a new slot and wakes the next
    /// writer while the pipe is not full (`wake_next_writer`).
    #[test]
    fn a_writer_after_its_wait_wakes_the_next() {
        let mut p = Pipe::new(3, 1024);
        for _ in 0..12 {
            assert!(matches!(p.pipe_write(w(9), false), Write::Done(_)));
        }
        assert_eq!(p.pipe_write(w(1), false), Write::Wait);
        assert_eq!(p.pipe_write(w(2), false), Write::Wait);
        for _ in 0..8 {
            p.pipe_read(R, true);
        }
        // Two slots free: writer 1 takes one and wakes writer 2.
        assert_eq!(
            p.pipe_write(w(1), true),
            Write::Done(PipeWake::from_slice(&[w(2)]))
        );
        assert_eq!(p.slots(), 2);
    }
}
