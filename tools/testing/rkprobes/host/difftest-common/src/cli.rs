// SPDX-License-Identifier: GPL-2.0

//! The difftest binaries' command line: numbers (decimal or `0x` hexadecimal) after options,
//! and the exits on what is wrong (status 2).

/// The arguments after the program name.
pub struct Args(std::iter::Skip<std::env::Args>);

impl Args {
    /// The process's arguments.
    pub fn from_env() -> Self {
        Args(std::env::args().skip(1))
    }

    /// The number after the option `what`; a missing or bad one exits with status 2.
    pub fn number(&mut self, what: &str) -> u64 {
        let v = self.0.next().unwrap_or_default();
        let v = v
            .strip_prefix("0x")
            .map_or_else(|| v.parse(), |h| u64::from_str_radix(h, 16));
        v.unwrap_or_else(|_| {
            eprintln!("{what} takes a number");
            std::process::exit(2)
        })
    }
}

impl Iterator for Args {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        self.0.next()
    }
}

/// Says the option `a` is unknown and exits with status 2.
pub fn unknown_option(a: &str) -> ! {
    eprintln!("unknown option {a}");
    std::process::exit(2)
}

/// The value of `r`, or its error after `prefix` and an exit with status 2.
pub fn or_exit<T>(r: Result<T, String>, prefix: &str) -> T {
    r.unwrap_or_else(|e| {
        eprintln!("{prefix}{e}");
        std::process::exit(2)
    })
}
