// SPDX-License-Identifier: GPL-2.0

//! Just enough ELF reading to find a section's bytes and address in a vmlinux.

/// A section's contents and where it is loaded.
pub struct Section {
    /// Load address of the first byte.
    pub addr: u64,
    /// The bytes.
    pub data: Vec<u8>,
    /// Whether the file is ELF64 (x86-64) rather than ELF32 (i386).
    pub is_64: bool,
}

fn get<const N: usize>(file: &[u8], at: usize) -> Result<[u8; N], String> {
    file.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| format!("ELF truncated at {at:#x}"))
}

fn u16_at(file: &[u8], at: usize) -> Result<usize, String> {
    Ok(u16::from_le_bytes(get(file, at)?).into())
}

fn u32_at(file: &[u8], at: usize) -> Result<u64, String> {
    Ok(u32::from_le_bytes(get(file, at)?).into())
}

fn u64_at(file: &[u8], at: usize) -> Result<u64, String> {
    Ok(u64::from_le_bytes(get(file, at)?))
}

fn index(v: u64) -> Result<usize, String> {
    usize::try_from(v).map_err(|e| e.to_string())
}

/// Finds section `name` in the little-endian ELF image `file`.
pub fn section(file: &[u8], name: &str) -> Result<Section, String> {
    if file.get(..4) != Some(b"\x7fELF") {
        return Err("not an ELF file".into());
    }
    let is_64 = match file.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("unknown ELF class".into()),
    };
    if file.get(5) != Some(&1) {
        return Err("not a little-endian ELF file".into());
    }
    let (shoff, shentsize, shnum, shstrndx) = if is_64 {
        (
            index(u64_at(file, 0x28)?)?,
            u16_at(file, 0x3a)?,
            u16_at(file, 0x3c)?,
            u16_at(file, 0x3e)?,
        )
    } else {
        (
            index(u32_at(file, 0x20)?)?,
            u16_at(file, 0x2e)?,
            u16_at(file, 0x30)?,
            u16_at(file, 0x32)?,
        )
    };
    // (name offset, address, file offset, size) of section `i`.
    let header = |i: usize| -> Result<(usize, u64, usize, usize), String> {
        let at = shoff + i * shentsize;
        if is_64 {
            Ok((
                index(u32_at(file, at)?)?,
                u64_at(file, at + 0x10)?,
                index(u64_at(file, at + 0x18)?)?,
                index(u64_at(file, at + 0x20)?)?,
            ))
        } else {
            Ok((
                index(u32_at(file, at)?)?,
                u32_at(file, at + 0x0c)?,
                index(u32_at(file, at + 0x10)?)?,
                index(u32_at(file, at + 0x14)?)?,
            ))
        }
    };
    let (_, _, strtab, strsize) = header(shstrndx)?;
    let names = file
        .get(strtab..strtab + strsize)
        .ok_or("section name table out of file")?;
    for i in 0..shnum {
        let (name_off, addr, off, size) = header(i)?;
        let sname = names
            .get(name_off..)
            .and_then(|s| s.split(|&b| b == 0).next())
            .unwrap_or_default();
        if sname == name.as_bytes() {
            let data = file
                .get(off..off + size)
                .ok_or_else(|| format!("section {name} out of file"))?
                .to_vec();
            return Ok(Section { addr, data, is_64 });
        }
    }
    Err(format!("no section {name}"))
}
