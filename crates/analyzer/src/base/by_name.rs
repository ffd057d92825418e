//! A map by (namespace, name) that is looked up with a record's own `&str`s: the analyzer's
//! per-record lookups copy no key, and a key is copied only for a new entry. Iteration is in
//! (namespace, name) order, as a map keyed by the pair would be.
//!
//! Namespaces are found by hash: a lookup runs on every record, and walking an ordered map of
//! hundreds of namespaces compared the probe with keys scattered over the heap (cache misses
//! were most of the replaying thread's string comparisons). Their order, for iteration, is kept
//! apart. Names within a namespace are few and stay ordered.

use std::collections::{BTreeMap, BTreeSet};

use crate::base::HashMap;

#[derive(Debug, Clone)]
pub(crate) struct ByName<V> {
    by_ns: HashMap<String, BTreeMap<String, V>>,
    /// The namespaces of `by_ns`, in order.
    order: BTreeSet<String>,
}

impl<V> Default for ByName<V> {
    fn default() -> Self {
        ByName {
            by_ns: HashMap::default(),
            order: BTreeSet::new(),
        }
    }
}

impl<V> ByName<V> {
    pub fn get(&self, ns: &str, name: &str) -> Option<&V> {
        self.by_ns.get(ns)?.get(name)
    }

    pub fn get_mut(&mut self, ns: &str, name: &str) -> Option<&mut V> {
        self.by_ns.get_mut(ns)?.get_mut(name)
    }

    pub fn contains(&self, ns: &str, name: &str) -> bool {
        self.get(ns, name).is_some()
    }

    /// Makes the entry of (`ns`, `name`) with `make` when there is none.
    pub fn ensure(&mut self, ns: &str, name: &str, make: impl FnOnce() -> V) {
        let names = match self.by_ns.get_mut(ns) {
            Some(names) => names,
            None => {
                self.order.insert(ns.to_owned());
                self.by_ns.entry(ns.to_owned()).or_default()
            }
        };
        if !names.contains_key(name) {
            names.insert(name.to_owned(), make());
        }
    }

    /// Sets the value of (`ns`, `name`).
    pub fn set(&mut self, ns: &str, name: &str, value: V) {
        if let Some(v) = self.get_mut(ns, name) {
            *v = value;
        } else {
            self.ensure(ns, name, || value);
        }
    }

    pub fn remove(&mut self, ns: &str, name: &str) -> Option<V> {
        let names = self.by_ns.get_mut(ns)?;
        let v = names.remove(name)?;
        if names.is_empty() {
            self.by_ns.remove(ns);
            self.order.remove(ns);
        }
        Some(v)
    }

    pub fn len(&self) -> usize {
        self.by_ns.values().map(BTreeMap::len).sum()
    }

    /// True when it holds no entry (a namespace is dropped with its last).
    pub fn is_empty(&self) -> bool {
        self.by_ns.is_empty()
    }

    /// The namespaces' maps, in namespace order.
    fn ordered(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, V>)> {
        self.order
            .iter()
            .filter_map(|ns| Some((ns.as_str(), self.by_ns.get(ns.as_str())?)))
    }

    /// Every entry, in (namespace, name) order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &V)> {
        self.ordered()
            .flat_map(|(ns, names)| names.iter().map(move |(name, v)| (ns, name.as_str(), v)))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.ordered().flat_map(|(_, names)| names.values())
    }

    /// Every value, in (namespace, name) order. Sorts the namespaces: for the rare walks over
    /// every entry (a gap, a new file, the report), not per record.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        let mut all: Vec<(&String, &mut BTreeMap<String, V>)> = self.by_ns.iter_mut().collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all.into_iter().flat_map(|(_, names)| names.values_mut())
    }

    /// The entries of namespace `ns`, in name order.
    pub fn in_ns<'a>(&'a self, ns: &str) -> impl Iterator<Item = (&'a str, &'a V)> + 'a {
        self.by_ns
            .get(ns)
            .into_iter()
            .flatten()
            .map(|(name, v)| (name.as_str(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::ByName;

    #[test]
    fn iteration_is_in_namespace_then_name_order_whatever_the_insertion_order() {
        let mut m = ByName::default();
        for (ns, name, v) in [("b", "y", 1), ("a", "z", 2), ("c", "x", 3), ("a", "b", 4)] {
            m.set(ns, name, v);
        }
        m.set("b", "y", 5);
        let all: Vec<(&str, &str, i32)> = m.iter().map(|(ns, n, v)| (ns, n, *v)).collect();
        assert_eq!(
            all,
            [("a", "b", 4), ("a", "z", 2), ("b", "y", 5), ("c", "x", 3)]
        );
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [4, 2, 5, 3]);
        assert_eq!(m.len(), 4);
        // A namespace emptied is gone from the order too, and comes back in its place.
        assert_eq!(m.remove("b", "y"), Some(5));
        assert_eq!(m.remove("b", "y"), None);
        assert!(!m.contains("b", "y"));
        assert_eq!(
            m.iter().map(|(ns, _, _)| ns).collect::<Vec<_>>(),
            ["a", "a", "c"]
        );
        m.ensure("b", "w", || 6);
        m.ensure("b", "w", || 7);
        assert_eq!(m.get("b", "w"), Some(&6));
        assert_eq!(
            m.iter().map(|(ns, n, _)| (ns, n)).collect::<Vec<_>>(),
            [("a", "b"), ("a", "z"), ("b", "w"), ("c", "x")]
        );
        assert_eq!(m.in_ns("a").map(|(n, _)| n).collect::<Vec<_>>(), ["b", "z"]);
        for v in m.values_mut() {
            *v *= 10;
        }
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [40, 20, 60, 30]);
    }
}
