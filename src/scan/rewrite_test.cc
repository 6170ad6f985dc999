#include <gtest/gtest.h>
TEST(Rewrite, Placeholder) {}
