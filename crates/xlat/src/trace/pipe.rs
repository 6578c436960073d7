//! A bounded queue of record batches from a producer thread (a workload generator, a trace
//! reader) to the simulator.
//!
//! The producer is mostly the faster side, so it mostly finds the queue full and sleeps. A
//! channel that wakes a sleeping sender at every receive (as `std::sync::mpsc::sync_channel`
//! does) makes the simulator pay a system call per batch, a few microseconds each on a virtual
//! machine: several percent of a fast run. Here the producer, once it has found the queue
//! full, is woken only when the simulator has taken half of it, and either side is woken only
//! if it is asleep: one wake per `depth / 2` batches. The batches arrive in order, each once.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The side that hung up: nothing more will be sent, or nobody receives any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

struct State<T> {
    items: VecDeque<T>,
    sender: bool,
    receiver: bool,
    /// The producer sleeps until the queue has room again (at most half full).
    sender_asleep: bool,
    /// The simulator sleeps until a batch arrives.
    receiver_asleep: bool,
}

struct Shared<T> {
    depth: usize,
    state: Mutex<State<T>>,
    room: Condvar,
    arrived: Condvar,
}

impl<T> Shared<T> {
    /// Neither side panics while holding the lock (it only moves items), so a poisoned lock
    /// still holds a consistent queue.
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A queue holding at most `depth` items (at least 2).
pub fn pipe<T>(depth: usize) -> (PipeSender<T>, PipeReceiver<T>) {
    let depth = depth.max(2);
    let shared = Arc::new(Shared {
        depth,
        state: Mutex::new(State {
            items: VecDeque::with_capacity(depth),
            sender: true,
            receiver: true,
            sender_asleep: false,
            receiver_asleep: false,
        }),
        room: Condvar::new(),
        arrived: Condvar::new(),
    });
    (
        PipeSender {
            shared: shared.clone(),
        },
        PipeReceiver { shared },
    )
}

pub struct PipeSender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> PipeSender<T> {
    /// Queue `item`, first sleeping while the queue is full. Gives it back if the receiver
    /// is gone.
    pub fn send(&self, item: T) -> Result<(), T> {
        let s = &*self.shared;
        let mut st = s.lock();
        while st.receiver && st.items.len() >= s.depth {
            st.sender_asleep = true;
            st = s.room.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if !st.receiver {
            return Err(item);
        }
        st.items.push_back(item);
        if st.receiver_asleep {
            st.receiver_asleep = false;
            s.arrived.notify_one();
        }
        Ok(())
    }
}

impl<T> Drop for PipeSender<T> {
    fn drop(&mut self) {
        self.shared.lock().sender = false;
        self.shared.arrived.notify_one();
    }
}

pub struct PipeReceiver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> PipeReceiver<T> {
    /// The next item, sleeping until one arrives; `Disconnected` once the queue is empty and
    /// the sender is gone.
    pub fn recv(&self) -> Result<T, Disconnected> {
        let s = &*self.shared;
        let mut st = s.lock();
        loop {
            if let Some(item) = st.items.pop_front() {
                if st.sender_asleep && st.items.len() <= s.depth / 2 {
                    st.sender_asleep = false;
                    s.room.notify_one();
                }
                return Ok(item);
            }
            if !st.sender {
                return Err(Disconnected);
            }
            st.receiver_asleep = true;
            st = s.arrived.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Receive nothing more: the sender's next (or current, blocked) send fails.
    pub fn hang_up(&mut self) {
        let mut st = self.shared.lock();
        st.receiver = false;
        // Batches nobody will read: free them now, not when the producer goes.
        st.items.clear();
        self.shared.room.notify_one();
    }
}

impl<T> Drop for PipeReceiver<T> {
    fn drop(&mut self) {
        self.hang_up();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_arrives_once_in_order_whichever_side_is_faster() {
        for (produce_slowly, depth) in [(false, 2), (false, 8), (true, 8)] {
            let (tx, rx) = pipe::<u64>(depth);
            let producer = std::thread::spawn(move || {
                for i in 0..20_000u64 {
                    if produce_slowly && i % 64 == 0 {
                        std::thread::yield_now();
                    }
                    tx.send(i).unwrap();
                }
            });
            let mut got = Vec::new();
            while let Ok(i) = rx.recv() {
                got.push(i);
            }
            producer.join().unwrap();
            assert_eq!(got, (0..20_000).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_sender_blocked_on_a_full_queue_learns_the_receiver_is_gone() {
        let (tx, rx) = pipe::<u32>(2);
        let (full_tx, full) = std::sync::mpsc::channel();
        let producer = std::thread::spawn(move || {
            let mut sent = 0;
            while tx.send(sent).is_ok() {
                sent += 1;
                if sent == 2 {
                    full_tx.send(()).unwrap();
                }
            }
            sent
        });
        // The queue is full: the next send blocks until (or fails after) the hang-up.
        full.recv().unwrap();
        drop(rx);
        assert_eq!(producer.join().unwrap(), 2);
    }

    #[test]
    fn the_receiver_drains_what_was_sent_before_the_sender_went() {
        let (tx, rx) = pipe::<u32>(4);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        drop(tx);
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.recv(), Err(Disconnected));
    }
}
