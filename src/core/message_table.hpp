// SPDX-License-Identifier: BSL-1.0
#pragma once

// An error category whose values run from 1 without gaps and whose messages are a table,
// the text of value v at index v - 1. The library's two categories (`redlock` and
// `redlock.node`) are two tables of this kind.

#include <boost/system/error_category.hpp>

#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>

namespace redlock::detail {

template <std::size_t N>
class message_table_category final : public boost::system::error_category
{
  public:
    message_table_category(const char* name, const std::array<std::string_view, N>& texts) noexcept
        : name_(name), texts_(texts)
    {
    }

    const char* name() const noexcept override { return name_; }

    std::string message(int ev) const override
    {
        if (ev >= 1 && static_cast<std::size_t>(ev) <= N) {
            return std::string(texts_[static_cast<std::size_t>(ev) - 1]);
        }
        return "unknown " + std::string(name_) + " error " + std::to_string(ev);
    }

  private:
    const char* name_;
    const std::array<std::string_view, N>& texts_;
};

/// The one category object of the table `texts` (an array of static storage), named `name`.
template <const auto& texts>
const boost::system::error_category& category_of(const char* name)
{
    static const message_table_category<std::size(texts)> instance(name, texts);
    return instance;
}

}  // namespace redlock::detail
