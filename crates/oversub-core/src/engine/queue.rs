//! The event queue: a 4-ary min-heap ordered by (time, insertion sequence), so
//! two events at the same instant pop in the order they were scheduled. That
//! order is part of the determinism contract (docs/determinism.md). Keys are
//! unique, so the pop order is that of any priority queue on the same key; a
//! 4-ary heap is half as deep as a binary one and its pop, the hot path of
//! the event loop, touches fewer cache lines.
//!
//! Pending events can be cancelled by id; the simulator itself does not
//! cancel, its handlers drop stale events by a generation number carried in
//! the event (`BurstEnd`, `HrTick`, guest timers), which costs nothing per pop.
//! Cancelled ids are remembered until the event reaches the head and is
//! dropped.

use super::time::Time;
use std::collections::HashSet;

/// Identifies one scheduled event (its insertion sequence number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(u64);

/// Children per heap node.
const ARITY: usize = 4;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// (time << 64) | insertion sequence: one comparison orders entries.
    key: u128,
    ev: E,
}

impl<E> Entry<E> {
    fn at(&self) -> Time {
        Time((self.key >> 64) as u64)
    }

    fn seq(&self) -> u64 {
        self.key as u64
    }
}

/// Min-queue of events keyed by (time, insertion sequence).
pub struct EventQueue<E> {
    /// The heap: `heap[0]` is the earliest; the children of `i` are
    /// `ARITY * i + 1 ..= ARITY * i + ARITY`.
    heap: Vec<Entry<E>>,
    next_seq: u64,
    cancelled: HashSet<u64>,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::new(),
            next_seq: 0,
            cancelled: HashSet::new(),
            popped: 0,
        }
    }

    /// Schedules `ev` at `at`; returns an id that `cancel` accepts.
    pub fn push(&mut self, at: Time, ev: E) -> EventId {
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = ((at.0 as u128) << 64) | seq as u128;
        let entry = Entry { key, ev };
        // Sift up: move parents down into the hole until the entry fits.
        let mut hole = self.heap.len();
        self.heap.push(entry);
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if self.heap[parent].key <= key {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = entry;
        EventId(seq)
    }

    /// Removes the earliest entry, cancelled or not.
    #[inline]
    fn pop_entry(&mut self) -> Option<Entry<E>> {
        let last = self.heap.pop()?;
        let heap = &mut self.heap[..];
        let Some(&top) = heap.first() else {
            return Some(last);
        };
        // Sift `last` down from the root: move the smallest child up into
        // the hole while it is earlier than `last`. The children are taken
        // as one slice (one bounds check per level, not one per child).
        let mut hole = 0;
        loop {
            let first = ARITY * hole + 1;
            let kids = match heap.get(first..first + ARITY) {
                Some(kids) => kids,
                None => match heap.get(first..) {
                    Some(kids) if !kids.is_empty() => kids,
                    _ => break,
                },
            };
            let mut min = 0;
            let mut min_key = kids[0].key;
            for (i, k) in kids.iter().enumerate().skip(1) {
                if k.key < min_key {
                    min = i;
                    min_key = k.key;
                }
            }
            if min_key >= last.key {
                break;
            }
            heap[hole] = kids[min];
            hole = first + min;
        }
        heap[hole] = last;
        Some(top)
    }

    /// Cancels a pending event. Cancelling an event that already fired is a no-op.
    pub fn cancel(&mut self, id: EventId) {
        if id.0 < self.next_seq {
            self.cancelled.insert(id.0);
        }
    }

    /// Removes and returns the earliest live event.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        while let Some(e) = self.pop_entry() {
            if !self.cancelled.is_empty() && self.cancelled.remove(&e.seq()) {
                continue;
            }
            self.popped += 1;
            return Some((e.at(), e.ev));
        }
        None
    }

    /// Time of the earliest pending entry (possibly a cancelled one).
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        while let Some(e) = self.heap.first() {
            if !self.cancelled.is_empty() && self.cancelled.contains(&e.seq()) {
                let seq = e.seq();
                self.pop_entry();
                self.cancelled.remove(&seq);
                continue;
            }
            return Some(e.at());
        }
        None
    }

    /// The earliest live event without removing it.
    pub fn peek(&mut self) -> Option<(Time, &E)> {
        self.peek_time()?;
        self.heap.first().map(|e| (e.at(), &e.ev))
    }

    /// Number of events popped so far (cancelled ones excluded).
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.cancelled.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_pops_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Time(10), 'a');
        q.push(Time(5), 'b');
        q.push(Time(10), 'c');
        q.push(Time(5), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }

    #[test]
    fn cancelled_events_never_pop() {
        let mut q = EventQueue::new();
        let a = q.push(Time(1), 1);
        q.push(Time(2), 2);
        let c = q.push(Time(3), 3);
        q.cancel(a);
        q.cancel(c);
        assert_eq!(q.len(), 1);
        assert_eq!(q.peek_time(), Some(Time(2)));
        assert_eq!(q.pop(), Some((Time(2), 2)));
        assert_eq!(q.pop(), None);
        assert_eq!(q.popped(), 1);
    }

    #[test]
    fn pops_in_key_order_like_a_sort() {
        let mut q = EventQueue::new();
        let mut want = Vec::new();
        let mut x: u64 = 12345;
        for i in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = (x >> 33) % 50;
            q.push(Time(t), i);
            want.push((t, i));
            if i % 7 == 0 {
                let (pt, pe) = q.pop().unwrap();
                want.sort();
                assert_eq!((pt.0, pe), want.remove(0));
            }
        }
        want.sort();
        let got: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
        assert_eq!(got, want);
    }
}
