// A fresh directory per test, removed with everything in it afterwards, so
// tests never share files and never leave any behind.

#ifndef BLOOMGATE_TESTS_UNIT_CONFIG_TEMP_DIR_H_
#define BLOOMGATE_TESTS_UNIT_CONFIG_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace bloomgate::testutil {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "bloomgate-config-XXXXXX")
            .string();
    // mkdtemp creates the directory atomically with a unique name, so
    // parallel test runs (ctest -j) cannot collide.
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << pattern;
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `contents` to `name` inside the directory; returns the full path.
  std::string WriteFile(const std::string& name,
                        const std::string& contents) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out << contents;
    EXPECT_TRUE(out.good()) << "could not write " << file;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace bloomgate::testutil

#endif  // BLOOMGATE_TESTS_UNIT_CONFIG_TEMP_DIR_H_
