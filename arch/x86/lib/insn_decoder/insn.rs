// SPDX-License-Identifier: GPL-2.0

//! Decoding of one x86 instruction into its parts.
//!
//! Constraints: `core` only, no allocation, no panics, and no read outside the input slice (or
//! past [`MAX_INSN_SIZE`] bytes of it); bad or short input is an [`Error`].
//!
//! The stages follow upstream's `arch/x86/lib/insn.c` in order (emulate prefix, legacy
//! prefixes, REX/REX2, VEX/EVEX, opcode, ModRM, SIB, displacement, immediates), with the same
//! rules, so lengths and fields agree with the C decoder. They run in one pass rather than
//! lazily. Three deliberate differences:
//! - AMD XOP (`8f` with `XOP.map_select >= 8`) is decoded (maps 8, 9 and 10), where the C
//!   decoder reads such bytes as `POP Ev`.
//! - EVEX.W is taken from the second EVEX payload byte; the C decoder tests the `z` bit of the
//!   third one. Only [`Insn::operand_bytes`] can differ, never a length.
//! - [`Insn::prefixes`] and the offsets count the emulate prefix where it is present.

use super::attr::{self, Attr};

/// Longest valid x86 instruction, in bytes.
pub const MAX_INSN_SIZE: usize = 15;

/// Xen's "emulate next instruction" marker: `ud2; .ascii "xen"`.
const XEN_EMULATE_PREFIX: [u8; 5] = [0x0f, 0x0b, 0x78, 0x65, 0x6e];
/// KVM's "emulate next instruction" marker: `ud2; .ascii "kvm"`.
const KVM_EMULATE_PREFIX: [u8; 5] = [0x0f, 0x0b, 0x6b, 0x76, 0x6d];

/// Errors of decoding and of the kprobes analyses, each one a kernel errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The instruction runs past the input or past 15 bytes (`ENODATA`).
    NoData,
    /// The bytes are not a valid instruction, or kprobes cannot use it (`EINVAL`).
    Invalid,
    /// kprobes cannot emulate this instruction (`EOPNOTSUPP`).
    NotSupported,
}

impl Error {
    /// Returns the negative errno the C code returns for this error.
    pub const fn to_errno(self) -> i32 {
        match self {
            Error::NoData => -61,
            Error::Invalid => -22,
            Error::NotSupported => -95,
        }
    }
}

/// The processor mode an instruction is decoded in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 32-bit protected mode (`INSN_MODE_32`).
    Bits32,
    /// 64-bit long mode (`INSN_MODE_64`).
    Bits64,
}

impl Mode {
    /// The mode kernel text is in (`INSN_MODE_KERN`); Rust kernels are x86-64 only.
    pub const KERNEL: Mode = Mode::Bits64;

    /// Returns the native address width of this mode, in bytes.
    pub const fn native_bytes(self) -> u8 {
        match self {
            Mode::Bits32 => 4,
            Mode::Bits64 => 8,
        }
    }
}

/// The encoding space an opcode byte belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpcodeMap {
    /// Legacy (or REX/REX2) encoding; the number is the map: 0 one-byte, 1 `0f`, 2 `0f 38`,
    /// 3 `0f 3a`.
    Legacy(u8),
    /// VEX encoding (`c4`/`c5`) with its `m` field.
    Vex(u8),
    /// EVEX encoding (`62`) with its `m` field.
    Evex(u8),
    /// AMD XOP encoding (`8f`) with its `map_select` field (8, 9 or 10).
    Xop(u8),
}

/// A sized, sign-extended field of an instruction (displacement or immediate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Field {
    /// The value, sign-extended from its encoded size (unsigned for the far-pointer selector).
    pub value: i32,
    /// The encoded size in bytes, 0 when absent.
    pub size: u8,
}

/// One decoded x86 instruction.
///
/// # Invariants
///
/// `len <= MAX_INSN_SIZE`, the first `len` bytes of `bytes` are the instruction, and the sizes
/// of its parts add up to `len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    bytes: [u8; MAX_INSN_SIZE],
    len: u8,
    mode: Mode,
    emulate_prefix_size: u8,
    prefixes: [u8; 4],
    prefix_size: u8,
    rex: [u8; 2],
    rex_size: u8,
    vex: [u8; 4],
    vex_size: u8,
    xop: bool,
    opcode: [u8; 4],
    opcode_size: u8,
    modrm: Option<u8>,
    sib: Option<u8>,
    displacement: Field,
    immediate1: Field,
    immediate2: Field,
    attr: Attr,
    operand_bytes: u8,
    address_bytes: u8,
}

/// A bounded reader over the instruction bytes.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self, ahead: usize) -> Result<u8, Error> {
        self.buf
            .get(self.pos.wrapping_add(ahead))
            .copied()
            .ok_or(Error::NoData)
    }

    fn next(&mut self) -> Result<u8, Error> {
        let b = self.peek(0)?;
        self.pos += 1;
        Ok(b)
    }

    fn next_le<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let end = self.pos.checked_add(N).ok_or(Error::NoData)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Error::NoData)?;
        let out = bytes.try_into().map_err(|_| Error::NoData)?;
        self.pos = end;
        Ok(out)
    }

    fn next_field(&mut self, size: u8) -> Result<Field, Error> {
        let value = match size {
            1 => i32::from(self.next()? as i8),
            2 => i32::from(i16::from_le_bytes(self.next_le()?)),
            4 => i32::from_le_bytes(self.next_le()?),
            _ => return Err(Error::Invalid),
        };
        Ok(Field { value, size })
    }
}

impl Insn {
    /// Decodes the instruction at the start of `input` in `mode`.
    ///
    /// At most [`MAX_INSN_SIZE`] bytes are read, and never beyond `input`. Mirrors upstream's
    /// `insn_decode()`: [`Error::NoData`] when the instruction does not fit, [`Error::Invalid`]
    /// for an opcode that needs a VEX/EVEX prefix it lacks or the reverse.
    pub fn decode(input: &[u8], mode: Mode) -> Result<Insn, Error> {
        let buf = input.get(..MAX_INSN_SIZE).unwrap_or(input);
        let mut insn = Insn {
            bytes: [0; MAX_INSN_SIZE],
            len: 0,
            mode,
            emulate_prefix_size: 0,
            prefixes: [0; 4],
            prefix_size: 0,
            rex: [0; 2],
            rex_size: 0,
            vex: [0; 4],
            vex_size: 0,
            xop: false,
            opcode: [0; 4],
            opcode_size: 0,
            modrm: None,
            sib: None,
            displacement: Field::default(),
            immediate1: Field::default(),
            immediate2: Field::default(),
            attr: 0,
            operand_bytes: 4,
            address_bytes: mode.native_bytes(),
        };
        let mut cur = Cursor { buf, pos: 0 };
        insn.decode_prefixes(&mut cur)?;
        insn.decode_opcode(&mut cur)?;
        insn.decode_modrm(&mut cur)?;
        insn.decode_sib_displacement(&mut cur)?;
        insn.decode_immediates(&mut cur)?;
        let len = cur.pos;
        insn.bytes = leading_bytes(buf.get(..len).ok_or(Error::NoData)?, buf);
        // INVARIANT: `len` bytes were read from `buf`, which holds at most MAX_INSN_SIZE, and
        // every part was read in order by the cursor.
        insn.len = len as u8;
        Ok(insn)
    }

    fn is_64(&self) -> bool {
        self.mode == Mode::Bits64
    }

    fn decode_prefixes(&mut self, cur: &mut Cursor<'_>) -> Result<(), Error> {
        if buf_starts_with(cur.buf, &XEN_EMULATE_PREFIX)
            || buf_starts_with(cur.buf, &KVM_EMULATE_PREFIX)
        {
            self.emulate_prefix_size = XEN_EMULATE_PREFIX.len() as u8;
            cur.pos = XEN_EMULATE_PREFIX.len();
        }

        let mut distinct = 0;
        let mut last = 0u8;
        let mut b = cur.peek(0)?;
        let mut a = attr::primary(b);
        while attr::is_legacy_prefix(a) {
            #[expect(
                clippy::manual_contains,
                reason = "slice::contains goes through core's memchr, which has panic paths \
                          where core is built with overflow checks"
            )]
            let seen = self
                .prefixes
                .get(..distinct)
                .is_some_and(|seen| seen.iter().any(|&p| p == b));
            if !seen {
                // A fifth distinct prefix is left to be read as the opcode, as C does.
                let Some(slot) = self.prefixes.get_mut(distinct) else {
                    break;
                };
                *slot = b;
                distinct += 1;
                match attr::prefix_id(a) {
                    attr::PFX_ADDRSZ => self.address_bytes ^= if self.is_64() { 12 } else { 6 },
                    attr::PFX_OPNDSZ => self.operand_bytes ^= 6,
                    _ => {}
                }
            }
            // At most 15 bytes are read, so the count cannot saturate.
            self.prefix_size = self.prefix_size.saturating_add(1);
            cur.pos += 1;
            last = b;
            b = cur.peek(0)?;
            a = attr::primary(b);
        }
        if last != 0 && last != self.prefixes[3] {
            let old = self.prefixes[3];
            if let (true, Some(seen)) = (old != 0, self.prefixes.get_mut(..distinct)) {
                for p in seen.iter_mut().filter(|p| **p == last) {
                    *p = old;
                }
            }
            self.prefixes[3] = last;
        }

        if self.is_64() {
            let b = cur.peek(0)?;
            match attr::prefix_id(attr::primary(b)) {
                attr::PFX_REX => {
                    self.rex = [b, 0];
                    self.rex_size = 1;
                    cur.pos += 1;
                    if b & 8 != 0 {
                        self.operand_bytes = 8;
                    }
                }
                attr::PFX_REX2 => {
                    let payload = cur.peek(1)?;
                    self.rex = [b, payload];
                    self.rex_size = 2;
                    cur.pos += 2;
                    if payload & 8 != 0 {
                        self.operand_bytes = 8;
                    }
                    // REX2 excludes VEX/EVEX.
                    return Ok(());
                }
                _ => {}
            }
        }

        let b = cur.peek(0)?;
        let id = attr::prefix_id(attr::primary(b));
        if matches!(id, attr::PFX_VEX2 | attr::PFX_VEX3 | attr::PFX_EVEX) {
            let b1 = cur.peek(1)?;
            // Outside 64-bit mode these are LES/LDS/BOUND unless ModRM.mod is 3.
            if !self.is_64() && b1 >> 6 != 3 {
                return Ok(());
            }
            self.vex[0] = b;
            self.vex[1] = b1;
            match id {
                attr::PFX_EVEX => {
                    self.vex[2] = cur.peek(2)?;
                    self.vex[3] = cur.peek(3)?;
                    self.vex_size = 4;
                }
                attr::PFX_VEX3 => {
                    self.vex[2] = cur.peek(2)?;
                    self.vex_size = 3;
                }
                _ => {
                    // Fake a VEX3 payload byte: W = 0, then vvvv, L and pp as in VEX2.
                    self.vex[2] = b1 & 0x7f;
                    self.vex_size = 2;
                }
            }
            cur.pos += usize::from(self.vex_size);
            if self.is_64() && self.vex_size >= 3 && self.vex[2] & 0x80 != 0 {
                self.operand_bytes = 8;
            }
        } else if b == 0x8f {
            // XOP: map_select >= 8 cannot be POP Ev (/0), whose ModRM.reg would be 0.
            // A missing second byte is left to the ModRM read, which reports it.
            if let Ok(b1) = cur.peek(1) {
                if b1 & 0x1f >= 8 {
                    let b2 = cur.peek(2)?;
                    self.vex = [b, b1, b2, 0];
                    self.vex_size = 3;
                    self.xop = true;
                    cur.pos += 3;
                    if self.is_64() && b2 & 0x80 != 0 {
                        self.operand_bytes = 8;
                    }
                }
            }
        }
        Ok(())
    }

    /// The last-prefix id that selects a table variant (`insn_last_prefix_id`).
    fn last_prefix_id(&self) -> u32 {
        if self.vex_size != 0 {
            return u32::from(self.vex_pp());
        }
        match self.prefixes[3] {
            0 => 0,
            p => attr::last_prefix_id(attr::primary(p)),
        }
    }

    fn decode_opcode(&mut self, cur: &mut Cursor<'_>) -> Result<(), Error> {
        let op = cur.next()?;
        self.opcode[0] = op;
        self.opcode_size = 1;

        if self.xop {
            self.attr = match self.vex_map() {
                8 => attr::MODRM | attr::imm(attr::IMM_BYTE),
                9 => attr::MODRM,
                10 => attr::MODRM | attr::imm(attr::IMM_DWORD),
                _ => return Err(Error::Invalid),
            };
            return Ok(());
        }

        if self.vex_size != 0 {
            let pp = self.vex_pp();
            self.attr = attr::avx(op, self.vex_map(), pp);
            if attr::has(self.attr, attr::EVEX_SCALABLE)
                && !self.vex_w()
                && u32::from(pp) == attr::PFX_OPNDSZ
            {
                self.operand_bytes = 2;
            }
            let needs_evex = attr::has(self.attr, attr::EVEXONLY) && self.vex_size != 4;
            let refuses_vex = !attr::has(self.attr, attr::VEXOK) && attr::group_id(self.attr) == 0;
            if needs_evex || refuses_vex {
                return Err(Error::Invalid);
            }
            return Ok(());
        }

        if self.rex_size == 2 {
            self.attr = if self.rex[1] & 0x80 != 0 {
                attr::escaped(op, self.last_prefix_id(), attr::primary(0x0f))
            } else {
                attr::primary(op)
            };
            return Ok(());
        }

        self.attr = attr::primary(op);
        while attr::escape_id(self.attr) != 0 {
            let op = cur.next()?;
            let slot = self
                .opcode
                .get_mut(usize::from(self.opcode_size))
                .ok_or(Error::Invalid)?;
            *slot = op;
            // The slot lookup above bounds the count by the array length.
            self.opcode_size = self.opcode_size.saturating_add(1);
            self.attr = attr::escaped(op, self.last_prefix_id(), self.attr);
        }
        if self.attr & (attr::VEXONLY | attr::EVEXONLY) != 0 {
            return Err(Error::Invalid);
        }
        Ok(())
    }

    fn decode_modrm(&mut self, cur: &mut Cursor<'_>) -> Result<(), Error> {
        if attr::has(self.attr, attr::MODRM) {
            let modrm = cur.next()?;
            self.modrm = Some(modrm);
            if attr::group_id(self.attr) != 0 {
                self.attr = attr::grouped(modrm, self.last_prefix_id(), self.attr);
                if self.vex_size != 0 && !attr::has(self.attr, attr::VEXOK) {
                    return Err(Error::Invalid);
                }
            }
        }
        if self.is_64() && attr::has(self.attr, attr::FORCE64) {
            self.operand_bytes = 8;
        }
        Ok(())
    }

    fn decode_sib_displacement(&mut self, cur: &mut Cursor<'_>) -> Result<(), Error> {
        let Some(modrm) = self.modrm else {
            return Ok(());
        };
        let (md, rm) = (modrm >> 6, modrm & 7);
        if self.address_bytes != 2 && md != 3 && rm == 4 {
            self.sib = Some(cur.next()?);
        }
        let base = self.sib.unwrap_or(0) & 7;
        let size = match (md, self.address_bytes) {
            (3, _) => 0,
            (1, _) => 1,
            (2, 2) => 2,
            (0, 2) if rm == 6 => 2,
            (2, _) => 4,
            (0, 2) => 0,
            (0, _) if rm == 5 || base == 5 => 4,
            _ => 0,
        };
        if size != 0 {
            self.displacement = cur.next_field(size)?;
        }
        Ok(())
    }

    fn decode_immediates(&mut self, cur: &mut Cursor<'_>) -> Result<(), Error> {
        if attr::has(self.attr, attr::MOFFSET) {
            match self.address_bytes {
                2 => self.immediate1 = cur.next_field(2)?,
                4 => self.immediate1 = cur.next_field(4)?,
                _ => {
                    self.immediate1 = cur.next_field(4)?;
                    self.immediate2 = cur.next_field(4)?;
                }
            }
            return Ok(());
        }
        let operand = if self.operand_bytes == 2 { 2 } else { 4 };
        match attr::immediate_kind(self.attr) {
            0 => return Ok(()),
            attr::IMM_BYTE => self.immediate1 = cur.next_field(1)?,
            attr::IMM_WORD => self.immediate1 = cur.next_field(2)?,
            attr::IMM_DWORD => self.immediate1 = cur.next_field(4)?,
            attr::IMM_QWORD => {
                self.immediate1 = cur.next_field(4)?;
                self.immediate2 = cur.next_field(4)?;
            }
            attr::IMM_PTR => {
                // There is no ptr16:64; the C decoder reports it as missing data.
                if self.operand_bytes == 8 {
                    return Err(Error::NoData);
                }
                self.immediate1 = cur.next_field(operand)?;
                let selector = cur.next_le::<2>()?;
                self.immediate2 = Field {
                    value: i32::from(u16::from_le_bytes(selector)),
                    size: 2,
                };
            }
            attr::IMM_VWORD32 => self.immediate1 = cur.next_field(operand)?,
            _ => {
                self.immediate1 = cur.next_field(operand)?;
                if self.operand_bytes == 8 {
                    self.immediate2 = cur.next_field(4)?;
                }
            }
        }
        if attr::has(self.attr, attr::SCNDIMM) {
            self.immediate2 = cur.next_field(1)?;
        }
        Ok(())
    }

    /// Returns the instruction's length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Returns whether the instruction is empty; a decoded instruction never is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns the instruction's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.get(..self.len()).unwrap_or(&self.bytes)
    }

    /// Returns the mode the instruction was decoded in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Returns the size of a Xen/KVM emulate prefix in front of the instruction, or 0.
    pub fn emulate_prefix_size(&self) -> usize {
        usize::from(self.emulate_prefix_size)
    }

    /// Returns the distinct legacy prefixes as upstream's `prefixes.bytes` holds them.
    ///
    /// Index 3 is the last prefix; iterate like `for_each_insn_prefix` with
    /// [`Insn::legacy_prefixes`].
    pub fn prefix_bytes(&self) -> [u8; 4] {
        self.prefixes
    }

    /// Iterates the legacy prefixes up to the first empty slot (`for_each_insn_prefix`).
    pub fn legacy_prefixes(&self) -> impl Iterator<Item = u8> + '_ {
        self.prefixes.iter().copied().take_while(|&p| p != 0)
    }

    /// Returns the last legacy prefix byte, or 0.
    pub fn last_prefix(&self) -> u8 {
        self.prefixes[3]
    }

    /// Returns the number of legacy prefix bytes, repeats included.
    pub fn prefix_size(&self) -> usize {
        usize::from(self.prefix_size)
    }

    /// Returns the REX (one byte) or REX2 (two bytes) prefix, empty when absent.
    pub fn rex(&self) -> &[u8] {
        self.rex.get(..usize::from(self.rex_size)).unwrap_or(&[])
    }

    /// Returns the REX.W, REX.R, REX.X and REX.B bits (of REX or REX2) as bits 3 to 0.
    pub fn rex_wrxb(&self) -> u8 {
        match self.rex_size {
            1 => self.rex[0] & 0xf,
            2 => self.rex[1] & 0xf,
            _ => 0,
        }
    }

    /// Returns the VEX, EVEX or XOP prefix bytes, empty when absent.
    ///
    /// For a two-byte VEX, a third byte is synthesised in the VEX3 layout, as upstream does.
    pub fn vex(&self) -> &[u8] {
        self.vex.get(..usize::from(self.vex_size)).unwrap_or(&[])
    }

    /// Returns the encoded size of the VEX, EVEX or XOP prefix (2, 3 or 4), or 0.
    pub fn vex_size(&self) -> usize {
        usize::from(self.vex_size)
    }

    fn vex_map(&self) -> u8 {
        match self.vex_size {
            2 => 1,
            3 => self.vex[1] & 0x1f,
            _ => self.vex[1] & 0x07,
        }
    }

    fn vex_pp(&self) -> u8 {
        match self.vex_size {
            2 => self.vex[1] & 3,
            _ => self.vex[2] & 3,
        }
    }

    fn vex_w(&self) -> bool {
        self.vex_size >= 3 && self.vex[2] & 0x80 != 0
    }

    /// Returns the opcode bytes as upstream's `opcode.bytes` holds them (escapes included).
    pub fn opcode_bytes(&self) -> &[u8] {
        self.opcode
            .get(..usize::from(self.opcode_size))
            .unwrap_or(&[])
    }

    /// Returns the encoding space and the final opcode byte.
    pub fn opcode(&self) -> (OpcodeMap, u8) {
        let last = self.opcode_bytes().last().copied().unwrap_or(0);
        let map = if self.xop {
            OpcodeMap::Xop(self.vex_map())
        } else if self.vex_size == 4 {
            OpcodeMap::Evex(self.vex_map())
        } else if self.vex_size != 0 {
            OpcodeMap::Vex(self.vex_map())
        } else if self.rex_size == 2 && self.rex[1] & 0x80 != 0 {
            OpcodeMap::Legacy(1)
        } else {
            match self.opcode_bytes() {
                [0x0f, 0x38, _] => OpcodeMap::Legacy(2),
                [0x0f, 0x3a, _] => OpcodeMap::Legacy(3),
                [0x0f, _] => OpcodeMap::Legacy(1),
                _ => OpcodeMap::Legacy(0),
            }
        };
        (map, last)
    }

    /// Returns the ModRM byte, if the instruction has one.
    pub fn modrm(&self) -> Option<u8> {
        self.modrm
    }

    /// Returns the SIB byte, if the instruction has one.
    pub fn sib(&self) -> Option<u8> {
        self.sib
    }

    /// Returns the displacement (size 0 when absent).
    pub fn displacement(&self) -> Field {
        self.displacement
    }

    /// Returns the first immediate or memory offset (size 0 when absent).
    pub fn immediate(&self) -> Field {
        self.immediate1
    }

    /// Returns the second immediate: the high half of a 64-bit one, a far selector, or the
    /// second byte of `ENTER`/`EXTRQ`-like forms (size 0 when absent).
    pub fn immediate2(&self) -> Field {
        self.immediate2
    }

    /// Returns the attribute word from the generated tables.
    pub fn attr(&self) -> Attr {
        self.attr
    }

    /// Returns the operand size in bytes (2, 4 or 8).
    pub fn operand_bytes(&self) -> u8 {
        self.operand_bytes
    }

    /// Returns the address size in bytes (2, 4 or 8).
    pub fn address_bytes(&self) -> u8 {
        self.address_bytes
    }

    /// Returns the offset of the opcode from the start of the instruction.
    pub fn opcode_offset(&self) -> usize {
        usize::from(self.emulate_prefix_size)
            + usize::from(self.prefix_size)
            + usize::from(self.rex_size)
            + usize::from(self.vex_size)
    }

    /// Returns the offset of the ModRM byte (or where it would be).
    pub fn modrm_offset(&self) -> usize {
        self.opcode_offset() + usize::from(self.opcode_size)
    }

    /// Returns the offset of the displacement (or where it would be).
    pub fn displacement_offset(&self) -> usize {
        self.modrm_offset() + usize::from(self.modrm.is_some()) + usize::from(self.sib.is_some())
    }

    /// Returns the offset of the first immediate (or where it would be).
    pub fn immediate_offset(&self) -> usize {
        self.displacement_offset() + usize::from(self.displacement.size)
    }
}

/// Copies `src` over the start of `dst`, as far as both reach.
///
/// Written with plain slice iterators, which have no panic path even where `core` itself is
/// built with overflow checks (as the kernel builds it), unlike `zip` or `copy_from_slice`.
pub fn copy_prefix(dst: &mut [u8], src: &[u8]) {
    let mut src = src.iter();
    for to in dst.iter_mut() {
        match src.next() {
            Some(from) => *to = *from,
            None => break,
        }
    }
}

/// Returns `insn`, the first bytes of `buf`, zero-padded to [`MAX_INSN_SIZE`].
///
/// Every decode passes here, so the usual case (`buf` holds [`MAX_INSN_SIZE`] bytes) takes two
/// overlapping 8-byte loads and a mask instead of a byte loop, which compiles to an out-of-line
/// `memcpy` call per decoded instruction.
fn leading_bytes(insn: &[u8], buf: &[u8]) -> [u8; MAX_INSN_SIZE] {
    let mut out = [0; MAX_INSN_SIZE];
    let (Some(lo), Some(hi)) = (
        buf.first_chunk::<8>(),
        buf.get(MAX_INSN_SIZE - 8..)
            .and_then(<[u8]>::first_chunk::<8>),
    ) else {
        copy_prefix(&mut out, insn);
        return out;
    };
    // Bytes 0..8 and 7..15: byte 7 is in both, with the same value.
    let all = u128::from(u64::from_le_bytes(*lo))
        | u128::from(u64::from_le_bytes(*hi)) << (8 * (MAX_INSN_SIZE - 8));
    // `insn.len() <= MAX_INSN_SIZE`, so the shift is below 128 bits.
    let mask = 1u128
        .wrapping_shl((insn.len() as u32).wrapping_mul(8))
        .wrapping_sub(1);
    if let Some(bytes) = (all & mask).to_le_bytes().first_chunk::<MAX_INSN_SIZE>() {
        out = *bytes;
    }
    out
}

fn buf_starts_with(buf: &[u8], prefix: &[u8]) -> bool {
    buf.get(..prefix.len()) == Some(prefix)
}
