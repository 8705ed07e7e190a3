//! [`InlineVec`]: a list of `Copy` items kept in a fixed array up to `N` items, on the heap
//! beyond.
//!
//! The broker's and the oracle's lists are short in the model checker (a handful of records,
//! timers and leases) and long in the simulator (up to millions of records). The checker
//! copies a whole state per transition: an inline list copies as one fixed-size array (no
//! loop, no call), where a `SmallVec` copies item by item. The array is always initialized
//! (items are `Default`), so this needs no `unsafe`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

/// A list of `Copy` items: `inline[..len]` while `len <= N`, else all of them in `heap`.
pub struct InlineVec<T: Copy + Default, const N: usize> {
    len: usize,
    inline: [T; N],
    /// The items when `len > N` (then `heap.len() == len`); unused (and perhaps stale, kept
    /// for its allocation) otherwise.
    heap: Vec<T>,
}

impl<T: Copy + Default, const N: usize> InlineVec<T, N> {
    /// An empty list.
    #[inline]
    pub fn new() -> Self {
        InlineVec {
            len: 0,
            inline: [T::default(); N],
            heap: Vec::new(),
        }
    }

    /// A list of `items`.
    pub fn from_slice(items: &[T]) -> Self {
        let mut list = InlineVec::new();
        list.extend_from_slice(items);
        list
    }

    #[inline]
    fn spilled(&self) -> bool {
        self.len > N
    }

    /// The items.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        if self.spilled() {
            &self.heap
        } else {
            &self.inline[..self.len]
        }
    }

    /// The items, mutable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if self.spilled() {
            &mut self.heap
        } else {
            &mut self.inline[..self.len]
        }
    }

    /// Moves the inline items to the heap (at `len == N`, before a growth).
    fn spill(&mut self) {
        self.heap.clear();
        self.heap.extend_from_slice(&self.inline);
    }

    /// Moves the items back inline once they fit (after a shrink).
    fn unspill(&mut self) {
        self.len = self.heap.len();
        if self.len <= N {
            self.inline[..self.len].copy_from_slice(&self.heap);
        }
    }

    /// Makes room for `additional` more items (on the heap, when they will not fit inline).
    pub fn reserve(&mut self, additional: usize) {
        let want = self.len.saturating_add(additional);
        if want > N {
            self.heap.reserve(want.saturating_sub(self.heap.len()));
        }
    }

    /// Appends `item`.
    #[inline]
    pub fn push(&mut self, item: T) {
        if self.len < N {
            self.inline[self.len] = item;
        } else {
            if self.len == N {
                self.spill();
            }
            self.heap.push(item);
        }
        self.len += 1;
    }

    /// Inserts `item` at `index`, shifting the later items.
    ///
    /// # Panics
    /// If `index > len`.
    pub fn insert(&mut self, index: usize, item: T) {
        assert!(index <= self.len, "insertion index out of bounds");
        if self.len < N {
            self.inline.copy_within(index..self.len, index + 1);
            self.inline[index] = item;
        } else {
            if self.len == N {
                self.spill();
            }
            self.heap.insert(index, item);
        }
        self.len += 1;
    }

    /// Removes and returns the item at `index`, shifting the later items.
    ///
    /// # Panics
    /// If `index >= len`.
    pub fn remove(&mut self, index: usize) -> T {
        assert!(index < self.len, "removal index out of bounds");
        if self.spilled() {
            let item = self.heap.remove(index);
            self.unspill();
            item
        } else {
            let item = self.inline[index];
            self.inline.copy_within(index + 1..self.len, index);
            self.len -= 1;
            item
        }
    }

    /// Keeps the items for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        if self.spilled() {
            self.heap.retain_mut(|item| keep(item));
            self.unspill();
        } else {
            let mut kept = 0;
            for index in 0..self.len {
                let mut item = self.inline[index];
                if keep(&mut item) {
                    self.inline[kept] = item;
                    kept += 1;
                }
            }
            self.len = kept;
        }
    }

    /// Keeps the first `len` items.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        if self.spilled() {
            self.heap.truncate(len);
            self.unspill();
        } else {
            self.len = len;
        }
    }

    /// Removes every item.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends `items`.
    pub fn extend_from_slice(&mut self, items: &[T]) {
        for &item in items {
            self.push(item);
        }
    }
}

impl<T: Copy + Default, const N: usize> Default for InlineVec<T, N> {
    fn default() -> Self {
        InlineVec::new()
    }
}

/// The inline array copies as one block; the heap's allocation is reused.
impl<T: Copy + Default, const N: usize> Clone for InlineVec<T, N> {
    fn clone(&self) -> Self {
        InlineVec {
            len: self.len,
            inline: self.inline,
            heap: if self.spilled() {
                self.heap.clone()
            } else {
                Vec::new()
            },
        }
    }

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        self.len = source.len;
        self.inline = source.inline;
        if source.spilled() {
            self.heap.clone_from(&source.heap);
        }
    }
}

impl<T: Copy + Default, const N: usize> Deref for InlineVec<T, N> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + Default, const N: usize> DerefMut for InlineVec<T, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for InlineVec<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for InlineVec<T, N> {}

/// Hashes as the slice of items (length first), like a `Vec` or a `SmallVec`.
impl<T: Copy + Default + Hash, const N: usize> Hash for InlineVec<T, N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl<T: Copy + Default + fmt::Debug, const N: usize> fmt::Debug for InlineVec<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Copy + Default, const N: usize> Extend<T> for InlineVec<T, N> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.push(item);
        }
    }
}

impl<T: Copy + Default, const N: usize> FromIterator<T> for InlineVec<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut list = InlineVec::new();
        list.extend(items);
        list
    }
}

impl<'a, T: Copy + Default, const N: usize> IntoIterator for &'a InlineVec<T, N> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a, T: Copy + Default, const N: usize> IntoIterator for &'a mut InlineVec<T, N> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
    }
}
