//! The event queue: a 4-ary min-heap ordered by (time, insertion sequence), so
//! two events at the same instant pop in the order they were scheduled. That
//! order is part of the determinism contract (docs/determinism.md). Keys are
//! unique, so the pop order is that of any priority queue on the same key; a
//! 4-ary heap is half as deep as a binary one and its pop, the hot path of
//! the event loop, touches fewer cache lines.
//!
//! There is no cancellation: the simulator's handlers drop stale events by
//! a generation number carried in the event (`BurstEnd`, `HrTick`, guest
//! timers), which costs nothing per pop. (A cancel-by-id set used to be
//! here; nothing called it, and every pop paid for testing it.)
//!
//! An entry is its time, its sequence number and the event, 8-byte aligned
//! (a `u128` key would align the entry to 16 bytes and pad it); the pair
//! compares as one 128-bit key.

use super::time::Time;

/// Identifies one scheduled event (its insertion sequence number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(u64);

/// Children per heap node.
const ARITY: usize = 4;

#[derive(Clone, Copy)]
struct Entry<E> {
    at: u64,
    seq: u64,
    ev: E,
}

impl<E> Entry<E> {
    /// (time << 64) | insertion sequence: one comparison orders entries.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.at as u128) << 64) | self.seq as u128
    }
}

/// The index and key of the earliest of a node's children: a full node as
/// a fixed tournament of two pairs (branch-light, no loop), the last node
/// of the heap, which may have fewer, by a scan.
#[inline(always)]
fn min_child<E>(kids: &[Entry<E>]) -> (usize, u128) {
    if let [a, b, c, d] = kids {
        let (i, ki) = if b.key() < a.key() {
            (1, b.key())
        } else {
            (0, a.key())
        };
        let (j, kj) = if d.key() < c.key() {
            (3, d.key())
        } else {
            (2, c.key())
        };
        return if kj < ki { (j, kj) } else { (i, ki) };
    }
    let mut min = 0;
    let mut min_key = kids[0].key();
    for (i, k) in kids.iter().enumerate().skip(1) {
        if k.key() < min_key {
            min = i;
            min_key = k.key();
        }
    }
    (min, min_key)
}

/// Min-queue of events keyed by (time, insertion sequence).
pub struct EventQueue<E> {
    /// The heap: `heap[0]` is the earliest; the children of `i` are
    /// `ARITY * i + 1 ..= ARITY * i + ARITY`.
    heap: Vec<Entry<E>>,
    next_seq: u64,
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
            popped: 0,
        }
    }

    /// Schedules `ev` at `at`; returns its id (its insertion sequence).
    #[inline]
    pub fn push(&mut self, at: Time, ev: E) -> EventId {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry { at: at.0, seq, ev };
        let key = entry.key();
        // Sift up: move parents down into the hole until the entry fits.
        let mut hole = self.heap.len();
        self.heap.push(entry);
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if self.heap[parent].key() <= key {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = entry;
        EventId(seq)
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let last = self.heap.pop()?;
        let heap = &mut self.heap[..];
        let Some(&top) = heap.first() else {
            self.popped += 1;
            return Some((Time(last.at), last.ev));
        };
        let last_key = last.key();
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
            let (min, min_key) = min_child(kids);
            if min_key >= last_key {
                break;
            }
            heap[hole] = kids[min];
            hole = first + min;
        }
        heap[hole] = last;
        self.popped += 1;
        Some((Time(top.at), top.ev))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.first().map(|e| Time(e.at))
    }

    /// The earliest pending event without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Time, &E)> {
        self.heap.first().map(|e| (Time(e.at), &e.ev))
    }

    /// Number of events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    fn ids_are_insertion_order_and_pops_are_counted() {
        let mut q = EventQueue::new();
        let a = q.push(Time(3), 1);
        let b = q.push(Time(2), 2);
        assert!(a < b);
        assert_eq!(q.len(), 2);
        assert_eq!(q.peek_time(), Some(Time(2)));
        assert_eq!(q.peek(), Some((Time(2), &2)));
        assert_eq!(q.pop(), Some((Time(2), 2)));
        assert_eq!(q.pop(), Some((Time(3), 1)));
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
        assert_eq!(q.popped(), 2);
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
