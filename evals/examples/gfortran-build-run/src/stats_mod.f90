! Summary statistics of a sample: mean, unbiased variance and standard error of the mean.
module stats_mod
  implicit none
  private
  public :: sample_mean, sample_variance, standard_error
  integer, parameter, public :: dp = kind(1.0d0)

contains

  pure function sample_mean(x) result(m)
    real(dp), intent(in) :: x(:)
    real(dp) :: m
    m = sum(x) / real(size(x), dp)
  end function sample_mean

  pure function sample_variance(x) result(v)
    real(dp), intent(in) :: x(:)
    real(dp) :: v
    v = sum((x - sample_mean(x))**2) / real(size(x) - 1, dp)
  end function sample_variance

  pure function standard_error(x) result(se)
    real(dp), intent(in) :: x(:)
    real(dp) :: se
    se = sqrt(sample_variance(x) / real(size(x), dp))
  end function standard_error

end module stats_mod
