//! Eight threads at once on everything a runtime shares between threads: objects (created,
//! cloned, sent and dropped: every object is freed exactly once), the per-thread error slot
//! (errors never cross threads), the global function registry, module loading, and calls.
//!
//! `scripts/sanitize.sh tsan` and `helgrind` run these under a race detector.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, OnceLock, mpsc};

use pactum::{Any, Error, ErrorKind, Function, Module, Obj};

use super::support;

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

/// An object for the other tests (which must not disturb `Tracked`'s counts).
struct Payload(i64);
pactum::object_type!(Payload, "pactum.test.stress.Payload");

#[test]
fn eight_threads_share_objects_and_functions() {
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

const THREADS: usize = 8;

/// Eight threads raise errors at the same moment (a barrier between raising and taking), from
/// Rust, from inside calls, and from a nested call whose error is caught and replaced: each
/// thread takes back exactly its own error, and a thread that raised nothing sees none.
#[test]
fn errors_raised_on_one_thread_are_never_seen_on_another() {
    const ROUNDS: usize = 100;
    let barrier = Barrier::new(THREADS + 1);
    let fail = Function::from_typed(|id: i64, round: i64| -> pactum::Result<i64> {
        Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!("call {id}.{round}"),
        ))
    });
    // Calls `fail`, then raises its own error with the inner one as the cause.
    let wrap = {
        let fail = fail.clone();
        Function::from_typed(move |id: i64, round: i64| -> pactum::Result<i64> {
            let inner = fail.call_typed::<_, i64>((id, round)).unwrap_err();
            assert!(Error::take_raised().is_none(), "the call took its error");
            Err(Error::caused_by(
                ErrorKind::RUNTIME_ERROR,
                format!("wrapped {id}.{round}"),
                inner,
            ))
        })
    };
    std::thread::scope(|scope| {
        for id in 0..THREADS as i64 {
            let (barrier, fail, wrap) = (&barrier, &fail, &wrap);
            scope.spawn(move || {
                let mut failure = None;
                for round in 0..ROUNDS as i64 {
                    Error::new(ErrorKind::KEY_ERROR, format!("raised {id}.{round}")).set_raised();
                    barrier.wait(); // every thread's slot is full now
                    // A failed check must not leave the other threads waiting at the barrier.
                    let checked = catch_unwind(AssertUnwindSafe(|| {
                        let raised = Error::take_raised().expect("this thread's error");
                        assert_eq!(raised.message(), format!("raised {id}.{round}"));
                        assert!(Error::take_raised().is_none(), "taking clears the slot");
                        let error = fail.call_typed::<_, i64>((id, round)).unwrap_err();
                        assert_eq!(error.message(), format!("call {id}.{round}"));
                        let error = wrap.call_typed::<_, i64>((id, round)).unwrap_err();
                        assert_eq!(error.message(), format!("wrapped {id}.{round}"));
                        assert_eq!(
                            error.cause().expect("cause").message(),
                            format!("call {id}.{round}")
                        );
                        assert!(
                            Error::take_raised().is_none(),
                            "calls leave no error raised"
                        );
                    }));
                    failure = failure.or(checked.err());
                    barrier.wait(); // no thread raises again before all have checked
                }
                if let Some(panic) = failure {
                    resume_unwind(panic);
                }
            });
        }
        // The test's own thread, a ninth, raises nothing and must never find an error.
        let mut leaked = 0;
        for _ in 0..ROUNDS {
            barrier.wait();
            leaked += usize::from(Error::take_raised().is_some());
            barrier.wait();
        }
        assert_eq!(leaked, 0, "no error leaks into a thread that raised none");
    });
}

/// Eight threads register, look up, call, list and remove global functions at once: each its
/// own names (always found, refused a second time without `allow_override`, gone once removed)
/// and one shared name that every thread overrides and some remove.
#[test]
fn eight_threads_share_the_global_registry() {
    const ROUNDS: i64 = 200;
    const PREFIX: &str = "pactum.test.stress.registry.";
    let shared = format!("{PREFIX}shared");
    let remove = Function::get_global("ffi.FunctionRemoveGlobal").unwrap();
    let list = Function::get_global("ffi.FunctionListGlobalNamesFunctor").unwrap();
    let listed = |list: &Function| -> Vec<std::string::String> {
        let names: Function = list.call_typed(()).unwrap();
        let count: i64 = names.call_typed((-1i64,)).unwrap();
        (0..count)
            .map(|i| names.call_typed((i,)).unwrap())
            .collect()
    };
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for id in 0..THREADS as i64 {
            let (barrier, remove, list, shared) = (&barrier, &remove, &list, &shared);
            scope.spawn(move || {
                barrier.wait();
                let mut previous: Option<std::string::String> = None;
                for round in 0..ROUNDS {
                    let own = format!("{PREFIX}t{id}.r{round}");
                    let function = Function::from_typed(move |x: i64| x + id * 1000 + round);
                    function.register_global(&own, false).unwrap();
                    let refused = function.register_global(&own, false).unwrap_err();
                    assert_eq!(
                        refused.message(),
                        format!("Global Function `{own}` is already registered")
                    );
                    let found = Function::get_global(&own).expect("own name is registered");
                    assert_eq!(
                        found.call_typed::<_, i64>((7i64,)).unwrap(),
                        7 + id * 1000 + round
                    );

                    // The shared name: whichever thread's function is found answers for it.
                    Function::from_typed(move |x: i64| x * 100 + id)
                        .register_global(shared, true)
                        .unwrap();
                    if round % 8 == id {
                        let _removed: bool = remove.call_typed((shared.as_str(),)).unwrap();
                    } else if let Err(error) =
                        Function::from_typed(|x: i64| x).register_global(shared, false)
                    {
                        assert_eq!(
                            error.message(),
                            format!("Global Function `{shared}` is already registered")
                        );
                    }
                    if let Some(found) = Function::get_global(shared) {
                        // Some thread's `x * 100 + id`, or the identity (registered while free).
                        let answer: i64 = found.call_typed((round,)).unwrap();
                        let owner = answer - round * 100;
                        assert!(
                            answer == round || (0..THREADS as i64).contains(&owner),
                            "{answer}"
                        );
                    }

                    if round % 50 == 0 {
                        let names = listed(list);
                        assert!(names.contains(&own), "a listing shows this thread's name");
                        let unique: HashSet<_> = names.iter().collect();
                        assert_eq!(unique.len(), names.len(), "a listing has no duplicates");
                    }
                    if let Some(previous) = previous.replace(own) {
                        assert!(remove.call_typed::<_, bool>((previous.as_str(),)).unwrap());
                        assert!(!remove.call_typed::<_, bool>((previous.as_str(),)).unwrap());
                        assert!(Function::get_global(&previous).is_none());
                    }
                    assert!(Error::take_raised().is_none());
                }
                let last = previous.expect("registered at least once");
                assert!(remove.call_typed::<_, bool>((last.as_str(),)).unwrap());
            });
        }
    });
    let _removed: bool = remove.call_typed((shared.as_str(),)).unwrap();
    assert!(
        !listed(&list).iter().any(|name| name.starts_with(PREFIX)),
        "every name was removed"
    );
}

/// Functions called from eight threads at once: one shared closure with shared state, nested
/// calls through the registry, built-in globals, and objects passed in and returned.
#[test]
fn eight_threads_call_shared_functions() {
    const ROUNDS: i64 = 500;
    let calls = Arc::new(AtomicUsize::new(0));
    let count = {
        let calls = calls.clone();
        Function::from_typed(move |x: i64| {
            calls.fetch_add(1, Ordering::Relaxed);
            x
        })
    };
    count
        .register_global("pactum.test.stress.calls.count", true)
        .unwrap();
    // Calls the global above through the registry on every call.
    let nested = Function::from_typed(|x: i64| -> pactum::Result<i64> {
        let inner = Function::get_global("pactum.test.stress.calls.count").expect("registered");
        Ok(inner.call_typed::<_, i64>((x,))? * 2)
    });
    let wrap = Function::from_typed(|x: i64| -> pactum::Array {
        pactum::Array::new([Any::from(x), Any::from(Obj::new(Payload(x)))])
    });
    let array_size = Function::get_global("ffi.ArraySize").unwrap();
    std::thread::scope(|scope| {
        for id in 0..THREADS as i64 {
            let (count, nested, wrap, array_size) = (&count, &nested, &wrap, &array_size);
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    let x = id * ROUNDS + round;
                    assert_eq!(count.call_typed::<_, i64>((x,)).unwrap(), x);
                    assert_eq!(nested.call_typed::<_, i64>((x,)).unwrap(), 2 * x);
                    let array: pactum::Array = wrap.call_typed((x,)).unwrap();
                    assert_eq!(array.get_as::<i64>(0).unwrap(), x);
                    assert_eq!(array.get_as::<Obj<Payload>>(1).unwrap().0, x);
                    assert_eq!(array_size.call_typed::<_, i64>((&array,)).unwrap(), 2);
                    let refused = count.call(&[Any::from("x").view()]).unwrap_err();
                    assert_eq!(refused.kind(), "TypeError");
                }
            });
        }
    });
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2 * THREADS * ROUNDS as usize,
        "every call ran exactly once"
    );
}

/// The C test module of `modules.rs`, built here under its own name (`stress_module`).
fn stress_module() -> Option<&'static Path> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        let include = support::official_include_dir()?;
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/rust_host_module.c");
        Some(support::build_c_module(
            "stress_module",
            &[&source],
            &include,
            &support::official_lib_dir(),
        ))
    })
    .as_deref()
}

/// Eight threads load the same C module over and over (`Module::load`, which installs the
/// forwarder on first use), call its functions, which call back into this process's
/// registry, and see each error only on the thread that raised it. Functions outlive the
/// module handles they came from and are dropped on another thread.
#[test]
fn eight_threads_load_modules_and_call_them() {
    const ROUNDS: i64 = 25;
    let Some(path) = stress_module() else { return };
    Function::from_typed(|x: i64| x * 5)
        .register_global("pactum.test.stress.module.quintuple", true)
        .unwrap();
    let barrier = Barrier::new(THREADS);
    let (sender, receiver) = mpsc::channel::<Function>();
    std::thread::scope(|scope| {
        for id in 0..THREADS as i64 {
            let (barrier, sender) = (&barrier, sender.clone());
            let failing = format!("pactum.test.stress.module.fail.t{id}");
            Function::from_typed(move |x: i64| -> pactum::Result<i64> {
                Err(Error::new(
                    ErrorKind::KEY_ERROR,
                    format!("thread {id} got {x}"),
                ))
            })
            .register_global(&failing, true)
            .unwrap();
            scope.spawn(move || {
                barrier.wait();
                for round in 0..ROUNDS {
                    let module = Module::load(path).expect("the C module loads");
                    assert!(module.implements("add_i64").unwrap());
                    assert!(module.get_function("missing").unwrap().is_none());
                    let add = module.function("add_i64").unwrap();
                    assert_eq!(add.call_typed::<_, i64>((id, round)).unwrap(), id + round);

                    let error = module.function("fail").unwrap().call(&[]).unwrap_err();
                    assert_eq!(
                        (error.kind().as_ref(), error.message().as_ref()),
                        ("ValueError", "failure from a C module")
                    );
                    let call_global = module.function("call_global").unwrap();
                    let five: i64 = call_global
                        .call_typed(("pactum.test.stress.module.quintuple", round))
                        .unwrap();
                    assert_eq!(five, 5 * round);
                    // A Rust error raised under C code reaches this thread's caller only.
                    let error = call_global
                        .call_typed::<_, Any>((failing.as_str(), round))
                        .unwrap_err();
                    assert_eq!(error.message(), format!("thread {id} got {round}"));
                    assert!(Error::take_raised().is_none());

                    assert_eq!(
                        module.function_doc("add_i64").unwrap().unwrap().as_str(),
                        "Adds two integers."
                    );
                    assert!(
                        module
                            .function_metadata("add_i64")
                            .unwrap()
                            .expect("metadata")
                            .as_str()
                            .starts_with("{\"type_schema\":")
                    );
                    drop(module);
                    // The function keeps its module alive; the next thread drops it.
                    sender.send(add).unwrap();
                }
            });
        }
        drop(sender);
        for add in receiver.iter() {
            std::thread::scope(|inner| {
                inner.spawn(move || assert_eq!(add.call_typed::<_, i64>((1i64, 2i64)).unwrap(), 3));
            });
        }
    });
}
