//! Maps and dicts through the public API, with pactum's own runtime behind them (object keys
//! hash through the runtime's type attribute columns).

use pactum::{Any, Dict, Map};

/// A key of one of several kinds: ints, bools, floats, small and heap strings.
fn key(i: usize) -> Any {
    match i % 6 {
        0 => Any::from(i as i64),
        1 => Any::from(format!("s{i}")),
        2 => Any::from(format!("a rather long key string number {i}")),
        3 => Any::from(i as f64 + 0.25),
        4 if i == 4 => Any::from(true),
        4 if i == 10 => Any::from(false),
        4 => Any::from(-(i as i64)),
        _ => Any::from(format!("k{i:05}")),
    }
}

/// xorshift64: a fixed sequence of operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn refcounts_return_to_baseline() {
    let value = Any::from("shared heap value ................................");
    let heap_key = Any::from("shared heap key ..................................");
    let count = |any: &Any| any.as_object_ref().unwrap().strong_count();
    let (value_base, key_base) = (count(&value), count(&heap_key));
    {
        let mut map = Map::new();
        let dict = Dict::new();
        let mut rng = Rng(7);
        for step in 0..3000usize {
            let k = if step % 11 == 0 {
                heap_key.clone()
            } else {
                key(rng.below(400))
            };
            match rng.below(5) {
                0 => {
                    map.remove(&k.view());
                    dict.remove(&k.view());
                }
                _ => {
                    map.insert(k.clone(), value.clone());
                    dict.insert(k, value.clone());
                }
            }
            if step == 1500 {
                dict.clear();
                let snapshot = map.clone();
                map.insert(heap_key.clone(), heap_key.clone());
                drop(snapshot);
            }
        }
        let nested = Dict::new();
        nested.insert(Any::from(dict.clone()), Any::from(map.clone()));
        nested.insert(value.clone(), Any::none());
        assert!(count(&value) > value_base);
    }
    assert_eq!(count(&value), value_base);
    assert_eq!(count(&heap_key), key_base);
}
