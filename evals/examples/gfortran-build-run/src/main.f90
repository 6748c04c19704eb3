! Reads one number per line from the file named on the command line and prints its statistics.
program stats
  use stats_mod, only: dp, sample_mean, sample_variance, standard_error
  implicit none
  character(len=512) :: path
  real(dp), allocatable :: x(:)
  real(dp) :: value
  integer :: unit, ios, n, i

  if (command_argument_count() /= 1) then
    write (*, '(A)') 'usage: stats FILE'
    stop 2
  end if
  call get_command_argument(1, path)

  open (newunit=unit, file=trim(path), status='old', action='read', iostat=ios)
  if (ios /= 0) then
    write (*, '(A)') 'cannot open '//trim(path)
    stop 1
  end if
  n = 0
  do
    read (unit, *, iostat=ios) value
    if (ios /= 0) exit
    n = n + 1
  end do
  allocate (x(n))
  rewind (unit)
  do i = 1, n
    read (unit, *) x(i)
  end do
  close (unit)

  write (*, '(A,I0)') 'n        = ', n
  write (*, '(A,F14.6)') 'mean     = ', sample_mean(x)
  write (*, '(A,F14.6)') 'variance = ', sample_variance(x)
  write (*, '(A,F14.6)') 'std.err  = ', standard_error(x)
end program stats
