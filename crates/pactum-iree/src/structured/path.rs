//! Paths into values, for error messages: `args[1]["w"][2]`, `kwargs["scale"]`, `results[0]`.
//! Built on the stack as the conversion descends, and rendered only when an error is reported.

use std::fmt;

use pactum::error::{Error, ErrorKind};

#[derive(Clone, Copy)]
pub(super) enum Segment<'a> {
    Arg(usize),
    Keyword(&'a str),
    Result(usize),
    Index(usize),
    Key(&'a str),
}

#[derive(Clone, Copy)]
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
}

impl<'a> Path<'a> {
    pub(super) fn root(segment: Segment<'a>) -> Path<'a> {
        Path {
            parent: None,
            segment,
        }
    }

    pub(super) fn index(&'a self, index: usize) -> Path<'a> {
        Path {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }

    pub(super) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            segment: Segment::Key(key),
        }
    }
}

/// `args[1]["w"][2]`, `kwargs["scale"]`, `results[0]`.
impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            write!(f, "{parent}")?;
        }
        match self.segment {
            Segment::Arg(i) => write!(f, "args[{i}]"),
            Segment::Keyword(name) => write!(f, "kwargs[{name:?}]"),
            Segment::Result(i) => write!(f, "results[{i}]"),
            Segment::Index(i) => write!(f, "[{i}]"),
            Segment::Key(key) => write!(f, "[{key:?}]"),
        }
    }
}

pub(super) fn error_at(kind: ErrorKind<'_>, path: &Path<'_>, message: impl fmt::Display) -> Error {
    Error::new(kind, format!("{path}: {message}"))
}
