// inject/static_program.cpp — see static_program.hpp.
#include "inject/static_program.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

namespace cuscope::inline v0::detail::inject {
namespace {

// Reads exactly `size` bytes at `offset`; false on a short read.
bool read_at(int fd, void* out, std::size_t size, off_t offset) {
  return ::pread(fd, out, size, offset) == static_cast<ssize_t>(size);
}

// Whether the dynamic section `dynamic` of `fd` names a shared object (DT_SONAME): the dynamic
// loader run as a program (ld.so ./app) does, a static-pie program does not.
bool names_a_shared_object(int fd, const Elf64_Phdr& dynamic) {
  for (Elf64_Xword at = 0; at + sizeof(Elf64_Dyn) <= dynamic.p_filesz; at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn entry{};
    if (!read_at(fd, &entry, sizeof(entry), static_cast<off_t>(dynamic.p_offset + at)) ||
        entry.d_tag == DT_NULL)
      return false;
    if (entry.d_tag == DT_SONAME) return true;
  }
  return false;
}

// Whether /proc/self/exe is a statically linked 64-bit ELF program: no PT_INTERP, and no dynamic
// section (gcc -static) or one that names no shared object (-static-pie). Anything it cannot read
// (no /proc, another format) counts as dynamic: the library runs as before.
bool statically_linked() {
  const int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr header{};
  bool dynamic = !read_at(fd, &header, sizeof(header), 0) ||
                 std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
                 header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_phentsize != sizeof(Elf64_Phdr);
  for (unsigned i = 0; !dynamic && i < header.e_phnum; ++i) {
    Elf64_Phdr ph{};
    const auto at = static_cast<off_t>(header.e_phoff + i * sizeof(Elf64_Phdr));
    dynamic = !read_at(fd, &ph, sizeof(ph), at) || ph.p_type == PT_INTERP ||
              (ph.p_type == PT_DYNAMIC && names_a_shared_object(fd, ph));
  }
  ::close(fd);
  return !dynamic;
}

// A line built on the stack (nothing allocated), cut at its capacity.
struct Line {
  char text[2048] = {};
  std::size_t size = 0;

  void add(char c) {
    if (size < sizeof(text)) text[size++] = c;
  }
  void add(const char* s) {
    for (; *s != '\0'; ++s) add(*s);
  }
  // `path` on one line, as every warning is: control bytes as \n, \t or \xNN.
  void add_path(const char* path) {
    constexpr const char* kHex = "0123456789abcdef";
    for (; *path != '\0'; ++path) {
      const auto byte = static_cast<unsigned char>(*path);
      if (byte == '\n' || byte == '\t') {
        add(byte == '\n' ? "\\n" : "\\t");
      } else if (byte < 0x20 || byte == 0x7f) {
        add("\\x");
        add(kHex[byte >> 4]);
        add(kHex[byte & 15]);
      } else {
        add(*path);
      }
    }
  }
};

}  // namespace

bool declined_static_program() noexcept {
  static const bool declined = statically_linked();
  static std::atomic<bool> said{false};
  if (!declined || said.exchange(true, std::memory_order_relaxed)) return declined;
  char self[512] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  Line line;
  line.add("cuscope: ");
  line.add_path(n > 0 ? self : "this program");
  line.add(
      " is statically linked: cuscope cannot run inside it (NVTX would load cuscope's library with a C "
      "library of its own, which crashes), so nothing of it is recorded; link it dynamically to profile "
      "it\n");
  for (const char* at = line.text; line.size > 0;) {
    const ssize_t written = ::write(STDERR_FILENO, at, line.size);
    if (written <= 0) break;
    at += written;
    line.size -= static_cast<std::size_t>(written);
  }
  return declined;
}

}  // namespace cuscope::inline v0::detail::inject
