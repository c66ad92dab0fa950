//! Eight threads creating, cloning, sending and dropping objects and calling functions: every
//! object is freed exactly once and errors never cross threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use pactum::{Any, Error, ErrorKind, Function, Obj};

static CREATED: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);

struct Tracked(u64);
impl Tracked {
    fn new(value: u64) -> Tracked {
        CREATED.fetch_add(1, Ordering::SeqCst);
        Tracked(value)
    }
}
impl Drop for Tracked {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}
pactum::object_type!(Tracked, "pactum.test.Tracked");

#[test]
fn eight_threads_share_objects_and_functions() {
    const THREADS: usize = 8;
    const ROUNDS: u64 = 2_000;
    let sum = Function::from_typed(|a: Obj<Tracked>, b: i64| a.0 as i64 + b);
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..THREADS).map(|_| mpsc::channel::<Any>()).unzip();
    std::thread::scope(|scope| {
        for (id, receiver) in receivers.into_iter().enumerate() {
            let next = senders[(id + 1) % THREADS].clone();
            let sum = sum.clone();
            scope.spawn(move || {
                let mut total = 0i64;
                for round in 0..ROUNDS {
                    let object = Obj::new(Tracked::new(round));
                    let any = Any::from(object.clone());
                    total += sum.call_typed::<_, i64>((&object, 1i64)).unwrap();
                    next.send(any).unwrap();
                    let list = pactum::List::new();
                    list.push(Any::from(object));
                    Error::new(ErrorKind::VALUE_ERROR, format!("thread {id}")).set_raised();
                    let raised = Error::take_raised().unwrap();
                    assert_eq!(
                        raised.message(),
                        format!("thread {id}"),
                        "errors never cross threads"
                    );
                }
                drop(next);
                let mut received = 0;
                while let Ok(any) = receiver.recv() {
                    let object: Obj<Tracked> = any.cast().unwrap();
                    assert!(object.0 < ROUNDS);
                    received += 1;
                }
                assert_eq!(received, ROUNDS as usize);
                assert_eq!(total, (0..ROUNDS as i64).map(|r| r + 1).sum::<i64>());
            });
        }
        drop(senders);
    });
    assert_eq!(CREATED.load(Ordering::SeqCst), THREADS * ROUNDS as usize);
    assert_eq!(
        DROPPED.load(Ordering::SeqCst),
        CREATED.load(Ordering::SeqCst),
        "every object freed exactly once"
    );
}
