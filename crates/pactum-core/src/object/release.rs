//! Releasing the values a dying container or object holds without recursing: a List nested a
//! million levels deep would otherwise release its child from inside its own deleter, and so
//! on down, until the thread's stack overflows. The outermost release on a thread drains a
//! per-thread queue in a loop; deleters that run meanwhile only add to it.

use core::cell::{Cell, RefCell};

use crate::any::Any;

thread_local! {
    static PENDING: RefCell<Vec<Any>> = const { RefCell::new(Vec::new()) };
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Drops `values`, deferring nested releases to the outermost call on this thread.
pub(crate) fn release_values(values: impl IntoIterator<Item = Any>) {
    let mut values = Some(values);
    // Queued unless the queue is busy or, during thread teardown, gone: then dropped in place.
    let _ = PENDING.try_with(|pending| {
        if let Ok(mut pending) = pending.try_borrow_mut() {
            pending.extend(values.take().into_iter().flatten());
        }
    });
    if let Some(values) = values {
        values.into_iter().for_each(drop);
        return;
    }
    if DRAINING.try_with(|d| d.replace(true)).unwrap_or(true) {
        return;
    }
    // Ends the draining state even when a destructor unwinds out of the loop, so later
    // releases drain again (what is left in the queue goes with them).
    struct Draining;
    impl Drop for Draining {
        fn drop(&mut self) {
            let _ = DRAINING.try_with(|d| d.set(false));
        }
    }
    let _draining = Draining;
    loop {
        // The borrow ends before the value drops: its deleter may queue more.
        let next = PENDING.with(|pending| pending.borrow_mut().pop());
        match next {
            Some(value) => drop(value),
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::release_values;
    use crate::any::Any;
    use crate::containers::List;

    #[test]
    fn a_deeply_nested_list_is_released_without_recursion() {
        let mut outer = List::new();
        for _ in 0..200_000 {
            let next = List::new();
            next.push(Any::from(outer));
            outer = next;
        }
        // Run on a small stack: recursion through the deleters would overflow it.
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || drop(outer))
            .expect("spawn")
            .join()
            .expect("released without overflowing the stack");
        release_values(Vec::new());
    }
}
